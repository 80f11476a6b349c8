#!/usr/bin/env -S node --max-semi-space-size=32
// --max-semi-space-size=32: a young generation of 32 MiB semi-spaces; with Node's default a GET spent a fifth
// of its time in scavenges, with it a twentieth (README, Performance). `npm start` passes the same flag.
// The published command; the code lives in dist/ (built by `npm run build`, run by `prepare`).
import { unsupportedNode } from './node-check.js';

const refusal = unsupportedNode(process.versions.node);
if (refusal) {
  process.stderr.write(`${refusal}\n`);
  process.exit(1);
}
// Imported only after the check: on an unsupported Node the SQLite driver must not even load.
const { main } = await import('../dist/src/cli/main.js');
process.exitCode = await main(process.argv.slice(2));
