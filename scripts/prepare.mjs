// npm's prepare step (after `npm ci` in a clone, and before `npm pack`): builds dist/ when the development tools
// are installed. `npm ci --omit=dev` has none; it then says so instead of failing the install, and the commands
// say dist/ is missing when run (the lean install is the `npm pack` tarball, which carries dist/: docs/deployment.md).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const tsc = new URL('../node_modules/typescript/bin/tsc', import.meta.url);
if (!existsSync(tsc)) {
  // An installed package tarball carries dist/ already: nothing to say.
  if (existsSync(new URL('../dist/src/cli/main.js', import.meta.url))) process.exit(0);
  console.warn('plant-store: TypeScript is not installed (--omit=dev), so dist/ was not built. Run `npm ci` to build it, or install the package tarball (docs/deployment.md).');
  process.exit(0);
}
// `npx plant-store` in a clone runs this step too, the first time its cache is empty (npm_command is then exec).
// The build `npm ci` made is there: rebuilding it would rewrite dist/ under any plant-store already running from it.
if (process.env.npm_command === 'exec' && existsSync(new URL('../dist/src/cli/main.js', import.meta.url))) process.exit(0);
// The client package first (packages/client, a workspace the tests import), then the service, then the
// document compiled for start-up (scripts/build-contract.mjs), then the console (console/, bundled into
// dist/console/): what `npm run build` does.
for (const args of [
  [tsc.pathname, '-p', 'packages/client/tsconfig.json'],
  [tsc.pathname, '-p', 'tsconfig.json'],
  ['scripts/build-contract.mjs'],
  [tsc.pathname, '-p', 'console/tsconfig.json'],
  ['scripts/build-console.mjs'],
]) {
  const r = spawnSync(process.execPath, args, { stdio: 'inherit', cwd: new URL('..', import.meta.url) });
  if (r.status !== 0) process.exit(r.status ?? 1);
}
