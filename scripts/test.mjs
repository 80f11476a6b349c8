// npm test: build, lint the contract, then run the whole suite once per store. PLANT_STORE_TEST_STORES (a
// comma list, default sqlite,postgres) narrows it; for postgres one throwaway cluster serves the whole run.
// The suite runs on the service's own Node.js (24, the "node" dependency), whichever Node started this script;
// PLANT_STORE_TEST_NODE=22 runs it on another line (scripts/runtimes.mjs installs it on first use).
// Extra arguments are test files (dist/test/...) to run instead of all of them.
import { spawnSync, spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { allExecutables, nodeExecutable, RUNTIME_LINE } from './runtimes.mjs';

const ALL_STORES = ['sqlite', 'postgres'];
// A test that hangs fails after this long instead of holding CI until its deadline.
const TEST_TIMEOUT_MS = 300_000;
// Files about one engine's internals; everything else runs on every store.
const ONLY_ON = {
  'dist/test/storage/commit-failure.test.js': ['sqlite', 'breaks the SQLite file and its locks'],
  'dist/test/storage/group-commit.test.js': ['sqlite', 'reads the SQLite file directly'],
  'dist/test/storage/migrations.test.js': ['sqlite', 'SQLite files and migration lists; test/storage/pg-*.test.ts cover PostgreSQL'],
  'dist/test/storage/write-worker.test.js': ['sqlite', 'holds a lock on the SQLite file from another process'],
  'dist/test/storage/disk-full.test.js': ['sqlite', 'fills the filesystem under a SQLite file'],
  'dist/test/ops/soak-short.test.js': ['sqlite', 'scripts/soak.mjs runs the server on a SQLite file'],
  'dist/test/auth/secret-storage.test.js': ['sqlite', 'scans the SQLite file bytes for secrets'],
  'dist/test/storage/pg-cluster.test.js': ['postgres', 'the PostgreSQL test helper'],
  'dist/test/storage/pg-store.test.js': ['postgres', 'PostgreSQL-specific behaviour'],
  'dist/test/storage/pg-outage.test.js': ['postgres', 'PostgreSQL outages'],
  'dist/test/storage/pg-commit-unknown.test.js': ['postgres', 'cuts a PostgreSQL connection at COMMIT'],
};

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

step('npm', ['run', 'build']);
// Every line the tests start the service on (test/ops/node-lines.test.ts), installed once before the suite.
allExecutables();
const testNode = nodeExecutable(process.env.PLANT_STORE_TEST_NODE || RUNTIME_LINE);
const testNodeVersion = spawnSync(testNode, ['--version'], { encoding: 'utf8' }).stdout.trim();
step('npx', ['redocly', 'lint', 'openapi/plant-store.yaml'], { REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' });

function testFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? testFiles(join(dir, e.name)) : e.name.endsWith('.test.js') ? [join(dir, e.name)] : [],
  );
}
const chosen = process.argv.slice(2);
const files = (chosen.length > 0 ? chosen : testFiles('dist/test')).sort();

function runSuite(store, env) {
  const mine = files.filter((f) => !ONLY_ON[f] || ONLY_ON[f][0] === store);
  for (const f of files) if (!mine.includes(f)) console.log(`# ${store}: skipping ${f} (${ONLY_ON[f][0]} only: ${ONLY_ON[f][1]})`);
  return new Promise((resolve) => {
    const child = spawn(
      testNode,
      ['--test', '--test-concurrency=2', `--test-timeout=${TEST_TIMEOUT_MS}`, '--import', './dist/test/setup/validate-responses.js', ...mine],
      { stdio: 'inherit', env: { ...process.env, ...env, PLANT_STORE_TEST_STORE: store } },
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
