#!/usr/bin/env -S node --max-semi-space-size=16
// --max-semi-space-size=16: 16 MiB young-generation semi-spaces, which bound resident memory at little CPU cost
// (docs/deployment.md, the production command). `npm start` passes the same flag.
// The published command; the code lives in dist/ (built by `npm run build`, shipped in the package tarball).
import { readFileSync } from 'node:fs';
import { unsupportedNode } from './node-check.js';

// Answered before anything else, on any Node.js: it only reads package.json.
if (process.argv[2] === '--version' || process.argv[2] === '-v') {
  const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  process.stdout.write(`${version}\n`);
  process.exit(0);
}

const refusal = unsupportedNode(process.versions.node);
if (refusal) {
  process.stderr.write(`${refusal}\n`);
  process.exit(1);
}
let main;
try {
  // Imported only after the check: on an unsupported Node the SQLite driver must not even load.
  ({ main } = await import('../dist/src/cli/main.js'));
} catch (err) {
  if (err?.code !== 'ERR_MODULE_NOT_FOUND' || !String(err.message).includes('dist/src/cli/main.js')) throw err;
  process.stderr.write(
    'plant-store: dist/ is missing. In a clone, run `npm ci` (which builds it) or `npm run build`; ' +
      'for an install without the development tools, install the package tarball made by `npm pack` (docs/deployment.md).\n',
  );
  process.exit(1);
}
process.exitCode = await main(process.argv.slice(2));
