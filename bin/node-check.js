// The Node.js lines plant-store runs on. better-sqlite3 13 (Node-API) needs 22 or newer; the test suite runs on
// 24, the runtime that `npm ci` installs (package.json's "node" dependency), and on 22 (see scripts/runtimes.mjs).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const MIN_NODE_MAJOR = 22;

/**
 * The Node.js 24 binary that npm installed with the package (the "node" dependency), where one is found: beside
 * this package in a clone, or hoisted beside it in an installation. A shebang finds the `node` first on PATH,
 * which outside npm scripts is the system's, so the refusal names this one.
 */
export function bundledNode() {
  for (const candidate of ['../node_modules/node/bin/node', '../../node/bin/node']) {
    const file = fileURLToPath(new URL(candidate, import.meta.url));
    if (existsSync(file)) return file;
  }
  return undefined;
}

/** The message that refuses to start on `version` (process.versions.node), or null when it is supported. */
export function unsupportedNode(version) {
  const major = Number(String(version).split('.')[0]);
  if (Number.isInteger(major) && major >= MIN_NODE_MAJOR) return null;
  const bundled = bundledNode();
  return (
    `plant-store needs Node.js ${MIN_NODE_MAJOR} or newer (tested on 22 and 24); this is Node.js ${version}.\n` +
    'Start it with `npm start` or `npx plant-store ...`, which run the Node.js 24 that `npm ci` installed, ' +
    (bundled ? `or run that Node.js directly: ${bundled} ${process.argv[1] ?? 'bin/plant-store.js'} ...` : 'or install Node.js 22 or 24.')
  );
}
