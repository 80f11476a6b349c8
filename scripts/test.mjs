// npm test: check the system packages the tests need (scripts/preflight.mjs), build, lint the contract, then
// run the whole suite once per store. PLANT_STORE_TEST_STORES (a comma list, default sqlite,postgres) narrows
// it; for postgres one throwaway cluster serves the whole run.
// The suite runs on the service's own Node.js (24, the "node" dependency), whichever Node started this script;
// PLANT_STORE_TEST_NODE=22 runs it on another line (scripts/runtimes.mjs installs it on first use).
// Extra arguments are test files to run instead of all of them, on every store like the whole suite:
// dist/test/plants/list-plants.test.js, or its source test/plants/list-plants.test.ts, or a folder (test/plants/).
import { spawnSync, spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ONLY_ON } from './engine-only.mjs';
import { ensureConnectionMigration, ensureSystemPackages } from './preflight.mjs';
import { allExecutables, nodeExecutable, RUNTIME_LINE } from './runtimes.mjs';

const ALL_STORES = ['sqlite', 'postgres'];
// A test that hangs fails after this long instead of holding CI until its deadline.
const TEST_TIMEOUT_MS = 300_000;

const stores = (process.env.PLANT_STORE_TEST_STORES || ALL_STORES.join(',')).split(',').map((s) => s.trim()).filter(Boolean);
for (const s of stores) {
  if (!ALL_STORES.includes(s)) {
    console.error(`PLANT_STORE_TEST_STORES: unknown store "${s}" (known: ${ALL_STORES.join(', ')})`);
    process.exit(2);
  }
}

function step(cmd, args, env = {}) {
  const r = spawnSync(cmd, args, { stdio: 'inherit', env: { ...process.env, ...env } });
  if (r.status !== 0) process.exit(r.status ?? 1);
}

function testFiles(dir, suffix) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? testFiles(join(dir, e.name), suffix) : e.name.endsWith(suffix) ? [join(dir, e.name)] : [],
  );
}
const compiled = (f) => f.replace(/^test\/(.*)\.ts$/, 'dist/test/$1.js');
// A folder (test/storage/) stands for every test file below it.
const chosen = process.argv
  .slice(2)
  .map((f) => f.replace(/^\.\//, '').replace(/\/$/, ''))
  .flatMap((f) => (/^test(\/|$)/.test(f) && !f.endsWith('.ts') ? testFiles(f, '.test.ts') : [f]))
  .map(compiled);

// Chromium, PostgreSQL, HAProxy: installed now as root, or the run stops here with one line saying what to do.
const runFiles = chosen.length > 0 ? chosen : testFiles('test', '.test.ts').map(compiled);
ensureSystemPackages(stores, runFiles);
ensureConnectionMigration(runFiles);

step('npm', ['run', 'build']);
// Every line the tests start the service on (test/ops/node-lines.test.ts), installed once before the suite.
allExecutables();
const testNode = nodeExecutable(process.env.PLANT_STORE_TEST_NODE || RUNTIME_LINE);
const testNodeVersion = spawnSync(testNode, ['--version'], { encoding: 'utf8' }).stdout.trim();
step('npx', ['redocly', 'lint', 'openapi/plant-store.yaml'], { REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' });

const files = (chosen.length > 0 ? chosen : testFiles('dist/test', '.test.js')).sort();

function runSuite(store, env) {
  const mine = files.filter((f) => !ONLY_ON[f] || ONLY_ON[f][0] === store);
  for (const f of files) if (!mine.includes(f)) console.log(`# ${store}: skipping ${f} (${ONLY_ON[f][0]} only: ${ONLY_ON[f][1]})`);
  // node --test with no files would run its default pattern, not nothing.
  if (mine.length === 0) return Promise.resolve(0);
  return new Promise((resolve) => {
    const child = spawn(
      testNode,
      [
        '--test',
        '--test-concurrency=2',
        `--test-timeout=${TEST_TIMEOUT_MS}`,
        // node's spec reporter with [sqlite] or [postgres] before every test's name.
        '--test-reporter=./scripts/engine-reporter.mjs',
        '--test-reporter-destination=stdout',
        '--import',
        './dist/test/setup/engine-only.js',
        '--import',
        './dist/test/setup/validate-responses.js',
        ...mine,
      ],
      // Servers the tests start run in one process unless a test asks for workers (test/ops/workers.test.ts):
      // the default, one per core, would fork as many per server as the machine has cores.
      { stdio: 'inherit', env: { WORKERS: '1', ...process.env, ...env, PLANT_STORE_TEST_STORE: store } },
    );
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

const failed = [];
for (const store of stores) {
  console.log(`# ---- test suite on ${store}, Node.js ${testNodeVersion} ----`);
  let code;
  if (store === 'postgres') {
    const { startPgCluster } = await import('../dist/test/helpers/pg-cluster.js');
    const cluster = await startPgCluster();
    try {
      code = await runSuite(store, { PLANT_STORE_TEST_PG_URL: cluster.url });
    } finally {
      await cluster.destroy();
    }
  } else {
    code = await runSuite(store, {});
  }
  if (code !== 0) failed.push(store);
}
if (failed.length > 0) {
  console.error(`# test suite failed on: ${failed.join(', ')} (Node.js ${testNodeVersion})`);
  process.exit(1);
}
console.log(`# test suite passed on: ${stores.join(', ')} (Node.js ${testNodeVersion})`);
