// The Node.js lines plant-store runs on. better-sqlite3 13 (Node-API) needs 22 or newer; the test suite runs on
// 24, the runtime that `npm ci` installs (package.json's "node" dependency), and on 22 (see scripts/runtimes.mjs).
export const MIN_NODE_MAJOR = 22;

/** The message that refuses to start on `version` (process.versions.node), or null when it is supported. */
export function unsupportedNode(version) {
  const major = Number(String(version).split('.')[0]);
  if (Number.isInteger(major) && major >= MIN_NODE_MAJOR) return null;
  return (
    `plant-store needs Node.js ${MIN_NODE_MAJOR} or newer (tested on 22 and 24); this is Node.js ${version}.\n` +
    'Start it with `npm start` or `npx plant-store ...`, which run the Node.js 24 that `npm ci` installed, ' +
    'or install Node.js 22 or 24.'
  );
}
