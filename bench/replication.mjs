// npm run replication: what Litestream replication (REPLICA_URL, a file:// replica) costs and gives, on one
// server (core 0) under wrk (core 1):
//   1. the replication lag (/metrics, sampled every 200 ms) while POST c=100 runs, and how much the replica grows
//      per plant written (extrapolated to a million);
//   2. the time `plant-store restore --from-replica` takes to bring back a store of REPLICATION_ROWS plants
//      (default 1,000,000; lib/big-db.mjs's fixture) from its replica, after serve has replicated it once.
// POST with replication on against off is a pair run: PAIR_ENDPOINT=post PAIR_B_ENV="REPLICA_URL=file:///tmp/r".
// Env: REPLICATION_SECONDS (20), REPLICATION_ROWS (1000000). Writes bench/results/replication.{md,json}.
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bigDatabase } from './lib/big-db.mjs';
import { BENCH_DIR, KINDS, ROOT, freePort } from './lib/servers.mjs';
import { runWrk } from './lib/wrk.mjs';

const SECONDS = Number(process.env.REPLICATION_SECONDS ?? 20);
const ROWS = Number(process.env.REPLICATION_ROWS ?? 1_000_000);
const log = (line) => console.log(`# ${line}`);
const cli = (args, env) => execFileSync(process.execPath, [join(ROOT, 'bin/plant-store.js'), ...args], { env: { ...process.env, ...env }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

function bytesUnder(dir) {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .reduce((sum, e) => sum + statSync(join(e.parentPath, e.name)).size, 0);
}

const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};

async function lagUnderPost() {
  const replica = mkdtempSync(join(tmpdir(), 'bench-replica-'));
  const port = await freePort();
  const plantStore = KINDS.find((k) => k.name === 'plant-store');
  const server = await plantStore.start(port, { env: { REPLICA_URL: `file://${replica}`, LOG_LEVEL: 'warn' } });
  const metricsToken = cli(['token', 'create', '--scopes', 'metrics:read', '--name', 'bench-metrics'], { DATABASE_URL: server.databaseUrl }).trim().split('\n').pop();
  const lagNow = async () => {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } })).text();
    return Number(/^plant_store_replication_lag_seconds\{replica="file"\} (\S+)$/m.exec(text)?.[1] ?? NaN);
  };
  const samples = [];
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      samples.push(await lagNow());
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  const before = bytesUnder(replica);
  const wrk = await runWrk({ script: 'post', connectPauseMs: 300, port, conns: 100, seconds: SECONDS, salt: 7, env: { BENCH_TOKEN: server.token } });
  sampling = false;
  await sampler;
  // What was written reaches the replica, then its size is read.
  const deadline = Date.now() + 30_000;
  while ((await lagNow()) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  const grown = bytesUnder(replica) - before;
  const written = Math.round(wrk.requests);
  const reqPerSec = written / wrk.busy_s;
  await server.stop();
  rmSync(replica, { recursive: true, force: true });
  const lags = samples.filter((x) => Number.isFinite(x));
  return {
    reqPerSec,
    written,
    lagP50: quantile(lags, 0.5),
    lagP99: quantile(lags, 0.99),
    lagMax: Math.max(...lags),
    samples: lags.length,
    replicaBytes: grown,
    bytesPerPlant: grown / written,
  };
}

async function restoreTime() {
  const fixture = await bigDatabase(ROWS, log);
  const dir = mkdtempSync(join(tmpdir(), 'bench-restore-'));
  const replica = join(dir, 'replica');
  const store = join(dir, 'store.db');
  copyFileSync(fixture.file, store);
  const env = { DATABASE_URL: `sqlite:${store}`, REPLICA_URL: `file://${replica}`, LOG_LEVEL: 'warn', BOOTSTRAP_TOKEN: 'false' };
  // serve makes the replica (a snapshot of the whole store), then stops.
  const port = await freePort();
  const plantStore = KINDS.find((k) => k.name === 'plant-store');
  const server = await plantStore.start(port, { dbFile: store, env: { REPLICA_URL: env.REPLICA_URL, LOG_LEVEL: 'warn' } });
  const deadline = Date.now() + 600_000;
  while (spawnSync(process.execPath, [join(ROOT, 'bin/plant-store.js'), 'replica', 'status'], { env: { ...process.env, ...env } }).status !== 0) {
    if (Date.now() > deadline) throw new Error('the replica was not made in 10 minutes');
    await new Promise((r) => setTimeout(r, 1_000));
  }
  await server.stop();
  const replicaBytes = bytesUnder(replica);
  const target = join(dir, 'restored.db');
  const started = performance.now();
  cli(['restore', '--from-replica'], { ...env, DATABASE_URL: `sqlite:${target}` });
  const seconds = (performance.now() - started) / 1000;
  const restoredBytes = statSync(target).size;
  rmSync(dir, { recursive: true, force: true });
  return { rows: ROWS, storeMb: fixture.sizeMb, replicaMb: replicaBytes / 2 ** 20, restoredMb: restoredBytes / 2 ** 20, seconds };
}

const lag = await lagUnderPost();
log(`POST c=100 ${SECONDS} s with a file:// replica: ${lag.reqPerSec.toFixed(0)} req/s, lag p50 ${lag.lagP50} s, p99 ${lag.lagP99} s, max ${lag.lagMax} s (${lag.samples} samples)`);
log(`replica grew ${lag.replicaBytes} bytes for ${lag.written} plants: ${lag.bytesPerPlant.toFixed(0)} bytes a plant, ${((lag.bytesPerPlant * 1e6) / 2 ** 20).toFixed(0)} MiB a million`);
const restore = await restoreTime();
log(`restore --from-replica of ${restore.rows} plants (store ${restore.storeMb.toFixed(0)} MiB, replica ${restore.replicaMb.toFixed(0)} MiB): ${restore.seconds.toFixed(1)} s`);

const when = new Date().toISOString();
writeFileSync(join(BENCH_DIR, 'results/replication.json'), JSON.stringify({ when, machine: process.env.BENCH_MACHINE ?? 'the shared 2-core VM', lag, restore }, null, 2) + '\n');
writeFileSync(
  join(BENCH_DIR, 'results/replication.md'),
  [
    `# Replication (npm run replication, ${when}, ${process.env.BENCH_MACHINE ?? 'the shared 2-core VM'})`,
    '',
    '| measure | value |',
    '|---|---|',
    `| POST c=100, ${SECONDS} s, file:// replica | ${lag.reqPerSec.toFixed(0)} req/s |`,
    `| replication lag during it (/metrics every 200 ms) | p50 ${lag.lagP50.toFixed(2)} s, p99 ${lag.lagP99.toFixed(2)} s, max ${lag.lagMax.toFixed(2)} s |`,
    `| replica growth | ${lag.bytesPerPlant.toFixed(0)} bytes a plant written, ${((lag.bytesPerPlant * 1e6) / 2 ** 20).toFixed(0)} MiB a million |`,
    `| restore --from-replica, ${restore.rows.toLocaleString('en-US')} plants | ${restore.seconds.toFixed(1)} s (store ${restore.storeMb.toFixed(0)} MiB, replica ${restore.replicaMb.toFixed(0)} MiB) |`,
    '',
  ].join('\n'),
);
