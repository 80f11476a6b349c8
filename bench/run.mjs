// npm run bench: plant-store against the Node.js ceiling and its peers, in one session, server on core 0 and
// load generator on core 1, warm-up before every measurement, the whole set interleaved over several rounds.
// Writes bench/results/{results.md,results.json,chart.svg} (lib/results.mjs). Knobs (env): BENCH_ROUNDS (2),
// BENCH_SECONDS (4), BENCH_WARMUP (2), BENCH_CONNS (1,10,100,256), BENCH_SERVERS (all), BENCH_ENDPOINTS (post,get,list),
// BENCH_BIG_ROWS (10000000; 0 skips the scaling part), BENCH_RATES (constant-rate POSTs/s; empty skips),
// BENCH_SOAK_SECONDS (600: plant-store POST at c=256 with its RSS sampled; 0 skips), BENCH_CONNECT_PAUSE_MS (300:
// each connection's first request waits that long, so no measurement starts with connections still unaccepted),
// BENCH_WORKER_CELLS (0 skips the worker scaling run, workers.mjs, which writes results/workers.{md,json}),
// BENCH_WRITE_CELLS and BENCH_FEED_CELLS (0 skips the plant-store-only write and feed cells, writes.mjs and feed.mjs,
// which write results/writes.{md,json} and results/feed.{md,json}), BENCH_STREAM_CELLS and BENCH_REPLICATION_CELLS
// (0 skips the event stream's cells, streams.mjs, and replication on against off, replication-cost.mjs; their rows
// join results.md, from results/streams.json and results/replication-cost.json), BENCH_TAKEOVER_CELLS (0 skips the
// upgrade by takeover under load, takeover.mjs, whose rows join results.md from results/takeover.json).
// Stages, in order: http (every cell above), writes, feed, streams, replication, takeover, workers. `--only STAGE[,STAGE]`
// (or BENCH_ONLY) runs those alone; results.md is then written again from results.json and the stages' files,
// so a stage run alone still lands in it.
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { cpus, loadavg, release } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { promisify } from 'node:util';
import { BENCH_DIR, KINDS, LOAD_CORE, ROOT, SEEDED, SEED_BASE, freePort, rssMb, seed } from './lib/servers.mjs';
import { fmt } from './lib/report.mjs';
import { writeResults } from './lib/results.mjs';
import { bigDatabase, warmPageCache } from './lib/big-db.mjs';
import { fsyncProbe } from './lib/fsync-probe.mjs';
import { runWrk } from './lib/wrk.mjs';
import { tmpdir } from 'node:os';

const execFileP = promisify(execFile);
// Every server but Prism runs on the Node that runs this script (process.execPath): npm run bench names the
// service's own runtime (../node_modules/.bin/node, the root package's "node" dependency), so the figures are
// those of the Node.js that `npm start` runs and the tests passed on.
const env = process.env;
const list = (name, dflt) => (env[name] ?? dflt).split(',').map((s) => s.trim()).filter(Boolean);
const cfg = {
  rounds: Number(env.BENCH_ROUNDS ?? 2),
  seconds: Number(env.BENCH_SECONDS ?? 4),
  warmup: Number(env.BENCH_WARMUP ?? 2),
  conns: list('BENCH_CONNS', '1,10,100,256').map(Number),
  servers: list('BENCH_SERVERS', KINDS.map((k) => k.name).join(',')),
  endpoints: list('BENCH_ENDPOINTS', 'post,get,list'),
  bigRows: Number(env.BENCH_BIG_ROWS ?? 10_000_000),
  rates: list('BENCH_RATES', '1000,2000').map(Number),
  soakSeconds: Number(env.BENCH_SOAK_SECONDS ?? 600),
  // Each connection's first request waits this long, so the measurement starts with every connection accepted
  // (see wrk/common.lua); it is taken off the run's duration when computing req/s.
  connectPauseMs: Number(env.BENCH_CONNECT_PAUSE_MS ?? 300),
};
const STAGES = ['http', 'writes', 'feed', 'streams', 'replication', 'takeover', 'workers'];
const onlyArg = process.argv.slice(2).map((a, i, all) => (a.startsWith('--only=') ? a.slice(7) : a === '--only' ? all[i + 1] : undefined)).find(Boolean);
const only = (onlyArg ?? env.BENCH_ONLY)?.split(',').map((s) => s.trim()).filter(Boolean);
for (const stage of only ?? []) if (!STAGES.includes(stage)) throw new Error(`--only: ${STAGES.join(', ')}, not ${stage}`);
const SKIP = { writes: 'BENCH_WRITE_CELLS', feed: 'BENCH_FEED_CELLS', streams: 'BENCH_STREAM_CELLS', replication: 'BENCH_REPLICATION_CELLS', takeover: 'BENCH_TAKEOVER_CELLS', workers: 'BENCH_WORKER_CELLS' };
const runs = (stage) => (only ? only.includes(stage) : env[SKIP[stage]] !== '0');
const Database = createRequire(join(ROOT, 'package.json'))('better-sqlite3');

for (const tool of ['wrk', 'taskset']) {
  try {
    execFileSync('sh', ['-c', `command -v ${tool}`]);
  } catch {
    throw new Error(`${tool} is missing: apt-get install -y ${tool === 'wrk' ? 'wrk' : 'util-linux'}`);
  }
}
if (!existsSync(join(ROOT, 'dist/src/cli/main.js'))) throw new Error('build the service first: npm run build (at the repository root)');

// Ids of bench POSTs: salt * 1e9 + ..., one salt per load run, distinct across sessions for ~5 days.
let runIndex = 0;
const sessionSalt = 1 + (Math.floor(Date.now() / 60_000) % 8000) * 1000;
const nextSalt = () => sessionSalt + (runIndex++ % 1000);
const log = (...a) => console.error(new Date().toISOString().slice(11, 19), ...a);

/** One wrk run pinned to the load core; returns its parsed summary. */
const wrk = (script, port, conns, seconds, extraEnv) =>
  runWrk({ script, port, conns, seconds, salt: nextSalt(), connectPauseMs: cfg.connectPauseMs, env: extraEnv });

/** Warm-up, then the measured run while sampling the server's RSS and the machine's load. */
async function measure(kind, server, endpoint, conns, round, extra = {}) {
  const script = { post: 'post', get: 'get', list: 'list' }[endpoint];
  const wenv = {
    BENCH_TOKEN: server.token, BENCH_SEEDED: String(extra.seeded ?? SEEDED), BENCH_SEED_BASE: String(extra.seedBase ?? SEED_BASE),
    ...(endpoint === 'list' && server.listPath ? { BENCH_PATH: server.listPath } : {}),
  };
  const warm = await wrk(script, server.port, conns, cfg.warmup, wenv);
  let rssMax = 0;
  const sampler = setInterval(() => (rssMax = Math.max(rssMax, rssMb(server.pid) || 0)), 250);
  const r = await wrk(script, server.port, conns, cfg.seconds, wenv);
  clearInterval(sampler);
  rssMax = Math.max(rssMax, rssMb(server.pid) || 0);
  const count = (s) => Object.entries(s.statuses).reduce((n, [k, v]) => n + (k >= 200 && k <= 299 ? v : 0), 0);
  const all = (s) => Object.values(s.statuses).reduce((a, b) => a + b, 0);
  const cell = {
    round, server: kind.name, role: kind.role, endpoint, conns, ...(extra.label && { label: extra.label }),
    rps: r.requests / r.busy_s, p50_ms: r.p50_us / 1000, p90_ms: r.p90_us / 1000, p99_ms: r.p99_us / 1000,
    p999_ms: r.p999_us / 1000, max_ms: r.max_us / 1000, socketErrors: r.errors.connect + r.errors.read + r.errors.write + r.errors.timeout,
    non2xx: all(r) - count(r), statuses: r.statuses, rssMaxMb: rssMax, load1: loadavg()[0],
    // For the row check: 200s of the warm-up and the measurement, and how many could have been in flight at each stop.
    ok: count(warm) + count(r), inflight: 2 * conns,
  };
  log(`${kind.name.padEnd(18)} ${endpoint.padEnd(4)} c=${String(conns).padEnd(3)} ${fmt(cell.rps).padStart(6)} req/s  p50 ${cell.p50_ms.toFixed(2)} ms  p99 ${cell.p99_ms.toFixed(2)} ms  non2xx ${cell.non2xx}  err ${cell.socketErrors}  rss ${fmt(rssMax)} MB  load ${cell.load1.toFixed(2)}`);
  return cell;
}


function benchRows(db) {
  const conn = new Database(db, { readonly: true });
  try {
    return conn.prepare("SELECT count(*) FROM plants WHERE tag = 'bench'").pluck().get();
  } finally {
    conn.close();
  }
}

async function startKind(kind, opts) {
  const port = await freePort();
  const server = await kind.start(port, opts);
  server.port = port;
  return server;
}

const cells = [];
const rowChecks = [];
const failures = [];
const machine = {
  cpu: cpus()[0]?.model, cores: cpus().length, kernel: release(), node: process.version,
  node24: execFileSync(join(BENCH_DIR, 'node_modules/node/bin/node'), ['--version'], { encoding: 'utf8' }).trim(),
  wrk: execFileSync('sh', ['-c', 'wrk -v 2>&1 | head -1'], { encoding: 'utf8' }).trim(),
  loadBefore: loadavg(), started: new Date().toISOString(),
  // The databases live in the temp dir (fresh ones) and bench/.data (the big one): same disk here.
  fsync: fsyncProbe(tmpdir()),
};
log('machine', JSON.stringify(machine), 'config', JSON.stringify(cfg), 'stages', (only ?? STAGES.filter((s) => s === 'http' || runs(s))).join(','));

for (let round = 1; runs('http') && round <= cfg.rounds; round++) {
  // Every other round in reverse order, so drift over the session does not favour whoever runs first.
  // A kind with none of the run's endpoints (floor-stream) is not started.
  const kinds = KINDS.filter((k) => cfg.servers.includes(k.name) && (!k.endpoints || k.endpoints.some((e) => cfg.endpoints.includes(e))));
  if (round % 2 === 0) kinds.reverse();
  for (const kind of kinds) {
    let server;
    try {
      server = await startKind(kind);
      if (!server.seeded) await seed(server.port, server.token);
    } catch (err) {
      failures.push({ round, server: kind.name, error: String(err.message ?? err) });
      log(`${kind.name}: cannot run: ${err.message}`);
      await server?.stop();
      continue;
    }
    try {
      let ok = 0, inflight = 0;
      const endpoints = cfg.endpoints.filter((e) => !kind.endpoints || kind.endpoints.includes(e));
      for (const endpoint of endpoints) {
        for (const conns of cfg.conns) {
          const cell = await measure(kind, server, endpoint, conns, round);
          cells.push(cell);
          if (endpoint === 'post') (ok += cell.ok), (inflight += cell.inflight);
        }
      }
      if (server.db && endpoints.includes('post')) {
        await new Promise((r) => setTimeout(r, 500));
        const rows = benchRows(server.db);
        rowChecks.push({ round, server: kind.name, rows, ok200: ok, inflightBound: inflight, pass: rows >= ok && rows - ok <= inflight });
        log(`row check (${kind.name}): ${rows} bench rows, ${ok} counted 200s, at most ${inflight} in flight at the stops`);
      }
    } finally {
      await server.stop();
    }
  }
}

// Constant rate: stalls show as a queue measured from each request's due time.
const constantRate = [];
if (runs('http') && cfg.rates.length) {
  for (const name of ['node:http', 'plant-store']) {
    const kind = KINDS.find((k) => k.name === name);
    const server = await startKind(kind);
    try {
      await wrk('post', server.port, 100, cfg.warmup, { BENCH_TOKEN: server.token });
      for (const rate of cfg.rates) {
        const { stdout } = await execFileP('taskset', ['-c', LOAD_CORE, process.execPath, join(BENCH_DIR, 'lib/open-loop.mjs'),
          `http://127.0.0.1:${server.port}/plants`, String(rate), String(Math.max(cfg.seconds, 10)), '256'],
          { env: { ...env, BENCH_TOKEN: server.token, BENCH_SALT: String(nextSalt()) }, timeout: 120_000 });
        const r = JSON.parse(stdout.split('\n').find((l) => l.startsWith('BENCHJSON ')).slice(10));
        constantRate.push({ server: name, ...r, load1: loadavg()[0] });
        log(`constant rate ${name} ${rate}/s: achieved ${fmt(r.achieved_rps)}  p50 ${r.p50_ms.toFixed(2)}  p99 ${r.p99_ms.toFixed(2)}  p99.9 ${r.p999_ms.toFixed(2)}  max ${r.max_ms.toFixed(1)} ms  errors ${r.errors}/${r.non2xx}`);
      }
    } finally {
      await server.stop();
    }
  }
}

// Scaling with data: the same POST and GET on an empty store and on one holding bigRows plants, interleaved.
const scaling = [];
let bigInfo;
if (runs('http') && cfg.bigRows > 0) {
  bigInfo = await bigDatabase(cfg.bigRows, log);
  // Random GETs over 10M rows touch the whole file. Read it once so the cells measure the store, not a cold
  // disk: the first pass over a cold file made each lookup ~70 us instead of ~6 us (one better-sqlite3 connection,
  // 100k random ids), and the previous runs' "10M rows: GET 0.2-0.4x" was that, not the B-tree.
  bigInfo.warmSeconds = warmPageCache(bigInfo.file);
  log(`read ${bigInfo.file} once into the OS page cache in ${bigInfo.warmSeconds.toFixed(1)} s`);
  const psKind = KINDS.find((k) => k.name === 'plant-store');
  for (let round = 1; round <= cfg.rounds; round++) {
    for (const big of [false, true]) {
      const server = await startKind(psKind, big ? { dbFile: bigInfo.file } : {});
      try {
        if (!big) await seed(server.port, server.token);
        const extra = big ? { seeded: cfg.bigRows, seedBase: 0, label: `${cfg.bigRows} rows` } : { label: 'empty' };
        for (const endpoint of ['post', 'get']) {
          for (const conns of [1, 100]) scaling.push(await measure(psKind, server, endpoint, conns, round, extra));
        }
      } finally {
        await server.stop();
      }
    }
  }
}

// Memory over a long run: RSS sampled every 5 s while POSTs at c=256 go on.
let soak;
if (runs('http') && cfg.soakSeconds > 0) {
  const psKind = KINDS.find((k) => k.name === 'plant-store');
  const server = await startKind(psKind);
  try {
    const samples = [];
    const t0 = Date.now();
    const sampler = setInterval(() => samples.push({ s: Math.round((Date.now() - t0) / 1000), rssMb: rssMb(server.pid), load1: loadavg()[0] }), 5_000);
    const r = await wrk('post', server.port, 256, cfg.soakSeconds, { BENCH_TOKEN: server.token });
    clearInterval(sampler);
    const ok = r.statuses['200'] ?? 0;
    await new Promise((res) => setTimeout(res, 500));
    const rows = benchRows(server.db);
    soak = { seconds: cfg.soakSeconds, rps: r.requests / r.busy_s, p50_ms: r.p50_us / 1000, p99_ms: r.p99_us / 1000, max_ms: r.max_us / 1000, ok200: ok, rows, statuses: r.statuses, errors: r.errors, samples };
    log(`soak: ${fmt(soak.rps)} req/s over ${cfg.soakSeconds} s, RSS ${samples.map((x) => fmt(x.rssMb)).join(' ')}`);
  } finally {
    await server.stop();
  }
}

machine.loadAfter = loadavg();
machine.finished = new Date().toISOString();
const RESULTS = join(BENCH_DIR, 'results');
// The HTTP cells of this run, or, when it ran other stages only, those of the last run that had them.
const httpRun = runs('http')
  ? { machine, cfg, cells, rowChecks, failures, constantRate, scaling, bigInfo, soak }
  : existsSync(join(RESULTS, 'results.json')) ? JSON.parse(readFileSync(join(RESULTS, 'results.json'), 'utf8')) : undefined;
if (runs('http')) writeResults(RESULTS, httpRun, log);

// Then the plant-store-only cells, each with its own server and results file: every write (writes.mjs) and
// the events feed (feed.mjs), with the round settings of this run; the event stream (streams.mjs; the readers
// in its process on the load core) and replication on against off (replication-cost.mjs), each bounded to
// about two minutes, whose rows join results.md.
const plantStoreOnly = { ...process.env, BENCH_ROUNDS: String(cfg.rounds), BENCH_SECONDS: String(cfg.seconds), BENCH_WARMUP: String(cfg.warmup), BENCH_CONNS: '1,100' };
if (runs('writes')) execFileSync(process.execPath, [join(BENCH_DIR, 'writes.mjs')], { stdio: 'inherit', env: plantStoreOnly });
if (runs('feed')) execFileSync(process.execPath, [join(BENCH_DIR, 'feed.mjs')], { stdio: 'inherit', env: plantStoreOnly });
if (runs('streams')) {
  execFileSync('taskset', ['-c', LOAD_CORE, process.execPath, join(BENCH_DIR, 'streams.mjs')], {
    stdio: 'inherit',
    env: {
      ...process.env, BENCH_OUT: join(RESULTS, 'streams'), BENCH_STREAMS_IDLE: env.BENCH_STREAMS_IDLE ?? '10000', BENCH_STREAMS_LIVE: env.BENCH_STREAMS_LIVE ?? '1000',
      BENCH_RATE: env.BENCH_STREAM_RATE ?? '100', BENCH_SECONDS: env.BENCH_STREAM_SECONDS ?? '30', BENCH_IDLE_SECONDS: env.BENCH_STREAM_IDLE_SECONDS ?? '20',
    },
  });
}
if (runs('replication')) execFileSync(process.execPath, [join(BENCH_DIR, 'replication-cost.mjs')], { stdio: 'inherit', env: { ...plantStoreOnly, BENCH_OUT: join(RESULTS, 'replication-cost') } });
// An upgrade by takeover under load (takeover.mjs; about two and a half minutes), its rows joining results.md too.
if (runs('takeover')) execFileSync(process.execPath, [join(BENCH_DIR, 'takeover.mjs')], { stdio: 'inherit', env: { ...process.env, BENCH_OUT: join(RESULTS, 'takeover') } });
if (httpRun && (runs('streams') || runs('replication') || runs('takeover'))) writeResults(RESULTS, httpRun, log, { mdOnly: true });

// Last, the cells that use every core: worker scaling (workers.mjs, its own results file).
if (runs('workers')) execFileSync(process.execPath, [join(BENCH_DIR, 'workers.mjs')], { stdio: 'inherit', env: process.env });
