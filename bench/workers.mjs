// npm run workers: how plant-store scales with its cores, on durable POST /plants and GET /plants/{id} at c=256
// (warm-up, then the measured run), in rounds that alternate the order of the counts, so that a drift of the
// machine does not favour one of them. The figure is each count's throughput as a ratio to the first count's
// (one) in the same round; the issue's targets (8 workers ≥ 6x GET and ≥ 5x POST of one) are checked and
// printed as met or not met.
//   SQLite, worker processes: `plant-store serve` with WORKERS=n on a fresh SQLite file (full durability).
//   PostgreSQL, instances: n `plant-store serve` processes (WORKERS=1 each) on one fresh PostgreSQL server
//   (lib/pg.mjs, fsync on), behind HAProxy (HTTP mode, round robin, keep-alive both sides). The CPU per request
//   of the instances, of HAProxy and of PostgreSQL are given apart, so the table says which one bounds.
//
// Cores: a count whose processes fit beside wrk (n + BENCH_LOAD_CORES ≤ cores) gets the first cores for the
// server side (its processes, and PostgreSQL and HAProxy) and wrk (BENCH_LOAD_CORES threads) the rest; a
// larger count (16 on a 16-core machine; 2 on this project's 2-core VM) runs unpinned, sharing every core
// with wrk, and its row says so: there only correctness and the 1-vs-2 figure mean anything.
//
// Env: WORKER_COUNTS (SQLite worker counts, "1,2,4,8,16"; default those up to the number of cores, at least
// 1,2; BENCH_WORKERS is the same), INSTANCE_COUNTS (PostgreSQL instance counts; default the worker counts when
// PostgreSQL's server binaries and haproxy are found, else none; "" skips them), BENCH_CONNS (256),
// BENCH_SECONDS (6), BENCH_WARMUP (3), BENCH_ROUNDS (2), BENCH_LOAD_CORES (a quarter of the cores, at least 2),
// HAPROXY (the command that runs HAProxy; default haproxy; bench-pack's on-target.sh sets it), BENCH_OUT
// (results file prefix; default results/workers).
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, hostname, loadavg, release, tmpdir } from 'node:os';
import { join } from 'node:path';
import { BENCH_DIR, KINDS, SEEDED, SEED_BASE, childPids, cpuMs, freePort, rssMb, seed } from './lib/servers.mjs';
import { postgresAvailable, startPostgres } from './lib/pg.mjs';
import { runWrk } from './lib/wrk.mjs';

const env = process.env;
const cores = cpus().length;
const loadCores = Number(env.BENCH_LOAD_CORES ?? Math.max(2, Math.floor(cores / 4)));
const countsOf = (spec) => spec.split(',').map((s) => s.trim()).filter(Boolean).map(Number);
const counts = countsOf(env.WORKER_COUNTS ?? env.BENCH_WORKERS ?? [1, 2, 4, 8, 16].filter((n) => n <= Math.max(2, cores)).join(','));
const haproxyCommand = (env.HAPROXY ?? 'haproxy').split(/\s+/).filter(Boolean);
const haproxyFound = () => spawnSync(haproxyCommand[0], [...haproxyCommand.slice(1), '-v'], { stdio: 'ignore' }).status === 0;
const pgReady = postgresAvailable() && haproxyFound();
const instanceCounts = env.INSTANCE_COUNTS !== undefined ? countsOf(env.INSTANCE_COUNTS) : pgReady ? counts : [];
if (instanceCounts.length && !pgReady) throw new Error('INSTANCE_COUNTS needs PostgreSQL\'s server binaries (apt-get install -y postgresql, or PG_BIN) and haproxy (or HAPROXY)');
for (const n of [...counts, ...instanceCounts]) if (!(Number.isInteger(n) && n >= 1)) throw new Error(`WORKER_COUNTS, INSTANCE_COUNTS: whole numbers from 1, not ${n}`);
const conns = Number(env.BENCH_CONNS ?? 256);
const seconds = Number(env.BENCH_SECONDS ?? 6);
const warmup = Number(env.BENCH_WARMUP ?? 3);
const rounds = Number(env.BENCH_ROUNDS ?? 2);
const CONNECT_PAUSE_MS = 300;
const TARGETS = [{ endpoint: 'get', at: 8, min: 6 }, { endpoint: 'post', at: 8, min: 5 }];
const plantStore = KINDS.find((k) => k.name === 'plant-store');
const log = (...a) => console.error(new Date().toISOString().slice(11, 19), ...a);

let salt = 1 + (Math.floor(Date.now() / 60_000) % 8000) * 1000;

/** Where a count's processes and wrk run: apart when they fit beside wrk's cores, else all on every core. */
function placement(n) {
  const pinned = n + loadCores <= cores;
  return {
    pinned,
    serverCores: pinned ? `0-${cores - loadCores - 1}` : `0-${cores - 1}`,
    wrkCores: pinned ? `${cores - loadCores}-${cores - 1}` : `0-${cores - 1}`,
    wrkThreads: cores > 2 ? loadCores : 1,
  };
}

/** SQLite: one `serve` with WORKERS=n, every worker listening before the load. */
async function startWorkers(n, where) {
  const port = await freePort();
  const server = await plantStore.start(port, { env: { WORKERS: String(n) }, cores: where.serverCores });
  // The first worker answers /healthz as soon as it is up.
  if (n > 1) for (let i = 0; i < 100 && childPids(server.pid).length < n; i++) await new Promise((r) => setTimeout(r, 100));
  await new Promise((r) => setTimeout(r, n > 1 ? 2_000 : 0));
  return { port, token: server.token, pids: () => [server.pid, ...childPids(server.pid)], cpu: () => ({ service: cpuMs(server.pid) }), stop: () => server.stop() };
}

/** HAProxy in front of the instances (docs/deployment.md's setup, without health checks: nothing fails here). */
async function startHaproxy(backendPorts, where) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-haproxy-'));
  const port = await freePort();
  const config = [
    'global', `  maxconn ${4 * conns + 100}`,
    'defaults', '  mode http', '  timeout connect 2s', '  timeout client 35s', '  timeout server 35s', '  option http-keep-alive',
    'frontend api', `  bind 127.0.0.1:${port}`, '  default_backend plant_store',
    'backend plant_store', '  balance roundrobin',
    ...backendPorts.map((p, i) => `  server app${i + 1} 127.0.0.1:${p}`), '',
  ].join('\n');
  writeFileSync(join(dir, 'haproxy.cfg'), config);
  const child = spawn('taskset', ['-c', where.serverCores, ...haproxyCommand, '-f', join(dir, 'haproxy.cfg'), '-db'], { stdio: ['ignore', 'ignore', 'inherit'] });
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`haproxy exited with ${child.exitCode}`);
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(1_000) })).ok) break;
    } catch {}
    if (Date.now() > deadline) throw new Error('haproxy did not answer /healthz in 20 s');
    await new Promise((r) => setTimeout(r, 200));
  }
  const stop = async () => {
    if (child.exitCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  return { port, pid: child.pid, stop };
}

/** PostgreSQL: n instances of `serve` (WORKERS=1) on one fresh PostgreSQL server, behind HAProxy. */
async function startInstances(n, where) {
  const pool = 10;
  const pg = await startPostgres({ cores: where.serverCores, settings: { max_connections: n * (pool + 2) + 20 } });
  const instances = [];
  let lb;
  const stop = async () => {
    await lb?.stop();
    await Promise.all(instances.map((i) => i.stop()));
    pg.stop();
  };
  try {
    for (let i = 0; i < n; i++) {
      const port = await freePort();
      instances.push({ port, ...(await plantStore.start(port, { databaseUrl: pg.url, env: { WORKERS: '1', DATABASE_POOL_SIZE: String(pool) }, cores: where.serverCores })) });
    }
    lb = await startHaproxy(instances.map((i) => i.port), where);
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    port: lb.port, token: instances[0].token, pids: () => instances.map((i) => i.pid),
    cpu: () => ({ service: instances.reduce((sum, i) => sum + cpuMs(i.pid), 0), lb: cpuMs(lb.pid), db: pg.cpuMs() }),
    stop,
  };
}

async function cell(server, endpoint, count, round, where, store) {
  const wenv = { BENCH_TOKEN: server.token, BENCH_SEEDED: String(SEEDED), BENCH_SEED_BASE: String(SEED_BASE) };
  const run = (s) => runWrk({ script: endpoint, port: server.port, conns, seconds: s, salt: salt++, connectPauseMs: CONNECT_PAUSE_MS, env: wenv, cores: where.wrkCores, threads: where.wrkThreads });
  await run(warmup);
  let rssMax = [];
  const sampler = setInterval(() => {
    const now = server.pids().map((p) => rssMb(p)).filter((v) => !Number.isNaN(v));
    if (now.reduce((a, b) => a + b, 0) > rssMax.reduce((a, b) => a + b, 0)) rssMax = now;
  }, 250);
  const cpu0 = server.cpu();
  const r = await run(seconds);
  const cpu1 = server.cpu();
  clearInterval(sampler);
  const ok = Object.entries(r.statuses).reduce((n, [k, v]) => n + (k >= 200 && k <= 299 ? v : 0), 0);
  const all = Object.values(r.statuses).reduce((a, b) => a + b, 0);
  const cpuUs = Object.fromEntries(Object.keys(cpu1).map((k) => [k, (1000 * (cpu1[k] - cpu0[k])) / r.requests]));
  const out = {
    store, round, count, endpoint, conns, pinned: where.pinned, rps: r.requests / r.busy_s, p50_ms: r.p50_us / 1000, p99_ms: r.p99_us / 1000,
    non2xx: all - ok, socketErrors: r.errors.connect + r.errors.read + r.errors.write + r.errors.timeout,
    cpuUs, rssMb: rssMax.map((v) => Math.round(v)), load1: loadavg()[0],
  };
  log(`${store} ${count} ${store === 'sqlite' ? 'workers' : 'instances'} ${endpoint.padEnd(4)} round ${round}: ${Math.round(out.rps)} req/s  p50 ${out.p50_ms.toFixed(2)} ms  p99 ${out.p99_ms.toFixed(2)} ms  ` +
    `CPU µs/req ${Object.entries(cpuUs).map(([k, v]) => `${k} ${v.toFixed(0)}`).join(' ')}  non2xx ${out.non2xx}  err ${out.socketErrors}  rss ${out.rssMb.join('/')} MB`);
  return out;
}

const cells = [];
for (const [store, list, start] of [['sqlite', counts, startWorkers], ['postgres', instanceCounts, startInstances]]) {
  for (let round = 1; round <= rounds && list.length; round++) {
    for (const n of round % 2 === 1 ? list : [...list].reverse()) {
      const where = placement(n);
      const server = await start(n, where);
      try {
        await seed(server.port, server.token);
        for (const endpoint of ['post', 'get']) cells.push(await cell(server, endpoint, n, round, where, store));
      } finally {
        await server.stop();
      }
    }
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
const rows = [];
for (const [store, list] of [['sqlite', counts], ['postgres', instanceCounts]]) {
  for (const endpoint of ['post', 'get']) {
    for (const n of list) {
      const mine = cells.filter((c) => c.store === store && c.endpoint === endpoint && c.count === n);
      const ratio = mine.map((c) => c.rps / cells.find((o) => o.store === store && o.endpoint === endpoint && o.count === list[0] && o.round === c.round).rps);
      const cpu = (k) => mine.map((c) => c.cpuUs[k]).filter(Number.isFinite);
      rows.push({
        store, endpoint, count: n, pinned: mine[0].pinned, rps: mine.map((c) => Math.round(c.rps)), ratio, median: median(ratio), p99: mine.map((c) => c.p99_ms),
        cpuUs: Object.fromEntries(['service', 'lb', 'db'].filter((k) => cpu(k).length).map((k) => [k, median(cpu(k))])), rss: Math.max(...mine.flatMap((c) => c.rssMb)),
      });
    }
  }
}
const targets = TARGETS.map(({ endpoint, at, min }) => {
  const row = counts[0] === 1 && rows.find((r) => r.store === 'sqlite' && r.endpoint === endpoint && r.count === at);
  return { endpoint, at, min, measured: row ? row.median : undefined, pinned: row?.pinned, met: row ? row.median >= min : undefined };
});
const machine = { host: hostname(), cpu: cpus()[0]?.model, cores, kernel: release(), node: process.version, loadCores };
const fmtList = (xs, f) => xs.map(f).join(' \\| ');
const label = { post: 'durable POST', get: 'GET by id' };
const table = (store) => {
  const mine = rows.filter((r) => r.store === store);
  const unit = store === 'sqlite' ? 'workers' : 'instances';
  const cpuCols = store === 'sqlite' ? ['service'] : ['service', 'lb', 'db'];
  const cpuName = { service: store === 'sqlite' ? 'server' : 'instances', lb: 'HAProxy', db: 'PostgreSQL' };
  return [
    `| endpoint | ${unit} | cores | req/s | × ${mine[0].count} | p99 ms | ${cpuCols.map((k) => `${cpuName[k]} CPU µs/req`).join(' | ')} | max RSS per process MB |`,
    `|---|---:|---|---|---|---|${cpuCols.map(() => '---:|').join('')}---:|`,
    ...mine.map((r) => `| ${label[r.endpoint]} | ${r.count} | ${r.pinned ? 'apart from wrk' : '**shared with wrk**'} | ${fmtList(r.rps, String)} | ${fmtList(r.ratio, (x) => x.toFixed(2))} (median ${r.median.toFixed(2)}) | ` +
      `${fmtList(r.p99, (x) => x.toFixed(1))} | ${cpuCols.map((k) => (r.cpuUs[k] === undefined ? '–' : r.cpuUs[k].toFixed(0))).join(' | ')} | ${r.rss} |`),
  ];
};
const md = [
  '# plant-store scaling over cores', '',
  `${new Date().toISOString()} on ${machine.host}: ${machine.cpu}, ${cores} cores, kernel ${machine.kernel}, Node ${machine.node}.`,
  `c=${conns}; ${warmup} s warm-up and ${seconds} s measured per cell; ${rounds} rounds, alternating the order of the counts. Per round: req/s, and the ratio to the first count of the same round; CPU per request is the median over the rounds, from /proc (every thread and child). ` +
    (placement(1).pinned
      ? `A count that fits beside wrk runs on cores ${placement(1).serverCores}, wrk (${placement(1).wrkThreads} threads) on ${placement(1).wrkCores}; a larger one shares every core with wrk.`
      : `Too few cores to give the server side and wrk (${placement(1).wrkThreads} thread) cores of their own: every count shares all ${cores} with wrk, so only correctness and the 1-vs-2 figure mean anything.`), '',
  '## SQLite, worker processes (WORKERS)', '',
  ...(counts.length ? table('sqlite') : ['Not run (WORKER_COUNTS empty).']), '',
  '### Targets', '',
  '| target | measured (median × one worker) | met |', '|---|---|---|',
  ...targets.map((t) => `| ${label[t.endpoint]}: ${t.at} workers ≥ ${t.min}× one | ${t.measured === undefined ? `not measured (WORKER_COUNTS ${counts.join(',')})` : `${t.measured.toFixed(2)}×${t.pinned ? '' : ', sharing its cores with wrk'}`} | ${t.met === undefined ? '–' : t.met ? 'met' : '**not met**'} |`),
  '',
  '## PostgreSQL, instances behind HAProxy', '',
  ...(instanceCounts.length
    ? ['One PostgreSQL server (fsync on) and HAProxy (HTTP mode, round robin) on the server cores with the instances (WORKERS=1 each, a pool of 10 connections each).', '', ...table('postgres')]
    : [pgReady ? 'Not run (INSTANCE_COUNTS empty).' : 'Not run: PostgreSQL\'s server binaries or haproxy were not found.']),
  '',
];
for (const t of targets) log(`target ${label[t.endpoint]} ${t.at} workers ≥ ${t.min}× one: ${t.measured === undefined ? 'not measured' : `${t.measured.toFixed(2)}× ${t.met ? 'met' : 'NOT MET'}`}`);
const prefix = env.BENCH_OUT ?? join(BENCH_DIR, 'results', 'workers');
writeFileSync(`${prefix}.md`, md.join('\n'));
writeFileSync(`${prefix}.json`, JSON.stringify({ machine, counts, instanceCounts, cells, rows, targets }, null, 2) + '\n');
console.log(md.join('\n'));
