// The last step of `npm run build` (and of `npm ci`'s prepare): compiles openapi/plant-store.yaml into
// dist/src/generated/contract.js (src/http/contract-build.ts), which every process loads instead of parsing the
// YAML and compiling its schemas at start-up.
import { mkdirSync, writeFileSync } from 'node:fs';
import { BUILT_CONTRACT_PATH } from '../dist/src/http/contract.js';
import { builtContractModule } from '../dist/src/http/contract-build.js';

mkdirSync(new URL('.', BUILT_CONTRACT_PATH), { recursive: true });
writeFileSync(BUILT_CONTRACT_PATH, builtContractModule());
