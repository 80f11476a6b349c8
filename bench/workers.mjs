// npm run workers: how plant-store scales with its worker processes (WORKERS), on a SQLite file with full
// durability. For each worker count it starts `plant-store serve` on a fresh database, seeds it, and measures
// durable POST /plants and GET /plants/{id} at c=256 (warm-up, then the measured run), in rounds that
// alternate the order of the counts, so that a drift of the machine does not favour one of them. The figure
// is each count's throughput as a ratio to one worker's in the same round.
//
// Cores: with at least BENCH_WORKERS' largest count + 2 cores, the server is pinned to the first cores and wrk
// (BENCH_LOAD_CORES threads) to the rest; on a smaller machine (this project's 2-core VM) both run unpinned and
// share every core, so only correctness and the 1-vs-2 figure mean anything there.
//
// Env: BENCH_WORKERS (counts, "1,2"; default 1,2,4,8 up to what the machine can hold), BENCH_CONNS (256),
// BENCH_SECONDS (6), BENCH_WARMUP (3), BENCH_ROUNDS (2), BENCH_LOAD_CORES (a quarter of the cores, at least
// 2), BENCH_OUT (results file prefix; default results/workers).
import { cpus, hostname, loadavg, release } from 'node:os';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BENCH_DIR, KINDS, SEEDED, SEED_BASE, childPids, freePort, rssMb, seed } from './lib/servers.mjs';
import { runWrk } from './lib/wrk.mjs';

const env = process.env;
const cores = cpus().length;
const loadCores = Number(env.BENCH_LOAD_CORES ?? Math.max(2, Math.floor(cores / 4)));
const counts = (env.BENCH_WORKERS ?? [1, 2, 4, 8].filter((n) => n === 1 || n + loadCores <= cores).join(',')).split(',').map(Number);
if (counts.length < 2 && !env.BENCH_WORKERS) counts.push(2);
const conns = Number(env.BENCH_CONNS ?? 256);
const seconds = Number(env.BENCH_SECONDS ?? 6);
const warmup = Number(env.BENCH_WARMUP ?? 3);
const rounds = Number(env.BENCH_ROUNDS ?? 2);
const pinned = Math.max(...counts) + loadCores <= cores;
const serverCores = pinned ? `0-${cores - loadCores - 1}` : `0-${cores - 1}`;
const wrkCores = pinned ? `${cores - loadCores}-${cores - 1}` : `0-${cores - 1}`;
const wrkThreads = pinned ? loadCores : 1;
const CONNECT_PAUSE_MS = 300;
const plantStore = KINDS.find((k) => k.name === 'plant-store');
const log = (...a) => console.error(new Date().toISOString().slice(11, 19), ...a);

let salt = 1 + (Math.floor(Date.now() / 60_000) % 8000) * 1000;

/** RSS of the primary and of each worker, in MB. */
const rssOf = (pid) => [pid, ...childPids(pid)].map((p) => rssMb(p)).filter((v) => !Number.isNaN(v));

async function cell(server, endpoint, workers, round) {
  const wenv = { BENCH_TOKEN: server.token, BENCH_SEEDED: String(SEEDED), BENCH_SEED_BASE: String(SEED_BASE) };
  const run = (s) => runWrk({ script: endpoint, port: server.port, conns, seconds: s, salt: salt++, connectPauseMs: CONNECT_PAUSE_MS, env: wenv, cores: wrkCores, threads: wrkThreads });
  await run(warmup);
  let rssMax = [];
  const sampler = setInterval(() => {
    const now = rssOf(server.pid);
    if (now.reduce((a, b) => a + b, 0) > rssMax.reduce((a, b) => a + b, 0)) rssMax = now;
  }, 250);
  const r = await run(seconds);
  clearInterval(sampler);
  const ok = Object.entries(r.statuses).reduce((n, [k, v]) => n + (k >= 200 && k <= 299 ? v : 0), 0);
  const all = Object.values(r.statuses).reduce((a, b) => a + b, 0);
  const out = {
    round, workers, endpoint, conns, rps: r.requests / r.busy_s, p50_ms: r.p50_us / 1000, p99_ms: r.p99_us / 1000,
    non2xx: all - ok, socketErrors: r.errors.connect + r.errors.read + r.errors.write + r.errors.timeout,
    rssMb: rssMax.map((v) => Math.round(v)), load1: loadavg()[0],
  };
  log(`workers=${workers} ${endpoint.padEnd(4)} round ${round}: ${Math.round(out.rps)} req/s  p50 ${out.p50_ms.toFixed(2)} ms  p99 ${out.p99_ms.toFixed(2)} ms  non2xx ${out.non2xx}  err ${out.socketErrors}  rss ${out.rssMb.join('/')} MB`);
  return out;
}

const cells = [];
for (let round = 1; round <= rounds; round++) {
  const order = round % 2 === 1 ? counts : [...counts].reverse();
  for (const workers of order) {
    const port = await freePort();
    const server = { ...(await plantStore.start(port, { env: { WORKERS: String(workers) }, cores: serverCores })), port };
    try {
      // Every worker listening before the load: the first one answers /healthz as soon as it is up.
      if (workers > 1) for (let i = 0; i < 100 && childPids(server.pid).length < workers; i++) await new Promise((r) => setTimeout(r, 100));
      await new Promise((r) => setTimeout(r, workers > 1 ? 2_000 : 0));
      await seed(port, server.token);
      for (const endpoint of ['post', 'get']) cells.push(await cell(server, endpoint, workers, round));
    } finally {
      await server.stop();
    }
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
const rows = [];
for (const endpoint of ['post', 'get']) {
  for (const workers of counts) {
    const mine = cells.filter((c) => c.endpoint === endpoint && c.workers === workers);
    const ratios = mine.map((c) => c.rps / cells.find((o) => o.endpoint === endpoint && o.workers === counts[0] && o.round === c.round).rps);
    rows.push({ endpoint, workers, rps: mine.map((c) => Math.round(c.rps)), ratio: ratios, p99: mine.map((c) => c.p99_ms), rss: Math.max(...mine.flatMap((c) => c.rssMb)) });
  }
}
const machine = { host: hostname(), cpu: cpus()[0]?.model, cores, kernel: release(), node: process.version, pinned, serverCores, wrkCores, wrkThreads };
const fmtList = (xs, f) => xs.map(f).join(' \\| ');
const md = [
  '# plant-store worker scaling', '',
  `${new Date().toISOString()} on ${machine.host}: ${machine.cpu}, ${cores} cores, kernel ${machine.kernel}, Node ${machine.node}.`,
  pinned
    ? `Server on cores ${serverCores}, wrk (${wrkThreads} threads) on ${wrkCores}.`
    : `Server and wrk unpinned, sharing all ${cores} cores (too few to give each its own): the figures show correctness and the 1-vs-2 figure, not scaling.`,
  `SQLite file, full durability; c=${conns}; ${warmup} s warm-up and ${seconds} s measured per cell; ${rounds} rounds, alternating the order. Per round: req/s, and the ratio to ${counts[0]} worker(s) of the same round.`, '',
  '| endpoint | workers | req/s | × 1 worker | p99 ms | max RSS per process MB |', '|---|---|---|---|---|---|',
  ...rows.map((r) => `| ${r.endpoint === 'post' ? 'durable POST' : 'GET by id'} | ${r.workers} | ${fmtList(r.rps, String)} | ${fmtList(r.ratio, (x) => x.toFixed(2))} (median ${median(r.ratio).toFixed(2)}) | ${fmtList(r.p99, (x) => x.toFixed(1))} | ${r.rss} |`),
  '',
];
const prefix = env.BENCH_OUT ?? join(BENCH_DIR, 'results', 'workers');
writeFileSync(`${prefix}.md`, md.join('\n'));
writeFileSync(`${prefix}.json`, JSON.stringify({ machine, cells }, null, 2) + '\n');
console.log(md.join('\n'));
