// npm --prefix bench run writes: every write of plant-store at c=1 and c=100 on one server (bin/plant-store.js
// serve, one process, a fresh SQLite file with full durability, as npm run bench starts it), server on core 0
// and wrk on core 1, warm-up before each measurement, in rounds that reverse the order of the cells after
// POST. POST /plants (unique ids) comes first in every round: each other write is given as a ratio to it.
//   PUT /plants/{id}             name and tag of a seeded plant at random (wrk/put.lua)
//   PATCH /plants/{id}           a merge patch of the name of a seeded plant at random (wrk/patch.lua)
//   PATCH with If-Match          each plant's previous answer's ETag, one request per plant in flight (wrk/patch-if-match.lua)
//   DELETE /plants/{id}          plants imported for the run, each deleted once (wrk/delete.lua; 404 = ran out)
// Writes results/writes.{md,json}. Env: BENCH_ROUNDS (2), BENCH_SECONDS (4), BENCH_WARMUP (2), BENCH_CONNS
// (1,100), BENCH_WRITES (post,put,patch,patch-if-match,delete), BENCH_CONNECT_PAUSE_MS (300), BENCH_OUT (results
// file prefix; default results/writes). About 2 minutes with the defaults.
import { cpus, loadavg, release } from 'node:os';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BENCH_DIR, KINDS, SEEDED, SEED_BASE, cpuMs, freePort, rssMb, seed } from './lib/servers.mjs';
import { DeletePool, WRITE_ENDPOINTS, writeRunEnv } from './lib/cells.mjs';
import { fsyncProbe } from './lib/fsync-probe.mjs';
import { runWrk } from './lib/wrk.mjs';
import { tmpdir } from 'node:os';

const env = process.env;
const list = (name, dflt) => (env[name] ?? dflt).split(',').map((s) => s.trim()).filter(Boolean);
const cfg = {
  rounds: Number(env.BENCH_ROUNDS ?? 2),
  seconds: Number(env.BENCH_SECONDS ?? 4),
  warmup: Number(env.BENCH_WARMUP ?? 2),
  conns: list('BENCH_CONNS', '1,100').map(Number),
  writes: list('BENCH_WRITES', WRITE_ENDPOINTS.join(',')),
  connectPauseMs: Number(env.BENCH_CONNECT_PAUSE_MS ?? 300),
};
for (const w of cfg.writes) if (!WRITE_ENDPOINTS.includes(w)) throw new Error(`BENCH_WRITES: ${WRITE_ENDPOINTS.join(', ')}, not ${w}`);
if (Math.max(...cfg.conns) >= SEEDED) throw new Error(`at most ${SEEDED} connections: patch-if-match gives each its own seeded plant`);
const log = (...a) => console.error(new Date().toISOString().slice(11, 19), ...a);
let salt = 1 + (Math.floor(Date.now() / 60_000) % 8000) * 1000 + 700;

const machine = { cpu: cpus()[0]?.model, cores: cpus().length, kernel: release(), node: process.version, loadBefore: loadavg(), started: new Date().toISOString(), fsync: fsyncProbe(tmpdir()) };
log('machine', JSON.stringify(machine), 'config', JSON.stringify(cfg));

const port = await freePort();
const server = { ...(await KINDS.find((k) => k.name === 'plant-store').start(port)), port };
const pool = new DeletePool(server);
const cells = [];
try {
  await seed(port, server.token);
  /** One wrk run of `endpoint`, with what its script needs prepared just before it; cpuUs: the server's CPU time per answer. */
  const run = async (endpoint, conns, seconds) => {
    const extra = await writeRunEnv(endpoint, server, conns, seconds, pool);
    const cpu0 = cpuMs(server.pid);
    const r = await runWrk({
      script: endpoint, port, conns, seconds, salt: salt++, connectPauseMs: cfg.connectPauseMs,
      env: { BENCH_TOKEN: server.token, BENCH_SEEDED: String(SEEDED), BENCH_SEED_BASE: String(SEED_BASE), ...extra },
    });
    r.cpuUs = (1000 * (cpuMs(server.pid) - cpu0)) / r.requests;
    if (endpoint === 'delete') pool.used(r, conns);
    return r;
  };
  for (let round = 1; round <= cfg.rounds; round++) {
    const rest = cfg.writes.filter((w) => w !== 'post');
    const order = [...(cfg.writes.includes('post') ? ['post'] : []), ...(round % 2 === 0 ? rest.reverse() : rest)];
    for (const endpoint of order) {
      for (const conns of cfg.conns) {
        await run(endpoint, conns, cfg.warmup);
        let rssMax = 0;
        const sampler = setInterval(() => (rssMax = Math.max(rssMax, rssMb(server.pid) || 0)), 250);
        const r = await run(endpoint, conns, cfg.seconds);
        clearInterval(sampler);
        const ok = Object.entries(r.statuses).reduce((n, [k, v]) => n + (k >= 200 && k <= 299 ? v : 0), 0);
        const cell = {
          round, endpoint, conns, rps: r.requests / r.busy_s, cpuUs: r.cpuUs, p50_ms: r.p50_us / 1000, p90_ms: r.p90_us / 1000, p99_ms: r.p99_us / 1000,
          max_ms: r.max_us / 1000, statuses: r.statuses, non2xx: r.requests - ok,
          socketErrors: r.errors.connect + r.errors.read + r.errors.write + r.errors.timeout, rssMaxMb: Math.round(rssMax), load1: loadavg()[0],
        };
        cells.push(cell);
        log(`${endpoint.padEnd(14)} c=${String(conns).padEnd(3)} round ${round}: ${Math.round(cell.rps)} req/s  ${Math.round(cell.cpuUs)} µs CPU/req  p50 ${cell.p50_ms.toFixed(2)} ms  p99 ${cell.p99_ms.toFixed(2)} ms  statuses ${JSON.stringify(r.statuses)}  err ${cell.socketErrors}  rss ${cell.rssMaxMb} MB  load ${cell.load1.toFixed(2)}`);
      }
    }
  }
} finally {
  await server.stop();
}
machine.loadAfter = loadavg();
machine.finished = new Date().toISOString();

const LABEL = { post: 'POST /plants', put: 'PUT /plants/{id}', patch: 'PATCH /plants/{id}', 'patch-if-match': 'PATCH with If-Match', delete: 'DELETE /plants/{id}' };
const md = [
  '# plant-store write cells', '',
  `Produced by \`npm --prefix bench run writes\` (bench/writes.mjs), ${machine.started} – ${machine.finished}: ${machine.cpu}, ${machine.cores} cores, kernel ${machine.kernel}, Node ${machine.node}.`,
  `One \`plant-store serve\` (one process, a fresh SQLite file, full durability, \`LOG_LEVEL=info\`) pinned to core 0, wrk (one thread) to core 1; ${cfg.warmup} s warm-up then ${cfg.seconds} s measured per cell; ${cfg.rounds} rounds, POST first in each and the other writes in reverse order every other round. ` +
    `A 4 KiB write + fdatasync took p50 ${machine.fsync.p50_ms.toFixed(2)} ms, p99 ${machine.fsync.p99_ms.toFixed(2)} ms before the run. Load average before ${machine.loadBefore.map((v) => v.toFixed(2)).join(' / ')}, after ${machine.loadAfter.map((v) => v.toFixed(2)).join(' / ')}.`,
  '', '× POST is the cell\'s req/s (then CPU per request) over POST /plants\' at the same concurrency in the same round. Server CPU is every thread of the server process (the event loop and the write thread) over the measured run, from /proc, per answer: less sensitive to the shared machine\'s drift than req/s. Statuses are every answer of the measured run; a 412 (If-Match) or a 404 (DELETE ran out of plants) would show there.', '',
  '| round | write | c | req/s | × POST | server CPU µs/req | × POST | p50 ms | p90 ms | p99 ms | max ms | statuses | max RSS MB |', '|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|',
  ...cells.map((c) => {
    const post = cells.find((p) => p.endpoint === 'post' && p.round === c.round && p.conns === c.conns);
    return `| ${c.round} | ${LABEL[c.endpoint]} | ${c.conns} | ${Math.round(c.rps)} | ${post ? (c.rps / post.rps).toFixed(2) + '×' : '–'} | ${Math.round(c.cpuUs)} | ${post ? (c.cpuUs / post.cpuUs).toFixed(2) + '×' : '–'} | ${c.p50_ms.toFixed(2)} | ${c.p90_ms.toFixed(2)} | ${c.p99_ms.toFixed(2)} | ${c.max_ms.toFixed(1)} | ${Object.entries(c.statuses).map(([k, v]) => `${k}×${v}`).join(' ')}${c.socketErrors ? `, ${c.socketErrors} socket errors` : ''} | ${c.rssMaxMb} |`;
  }),
  '',
];
const prefix = env.BENCH_OUT ?? join(BENCH_DIR, 'results', 'writes');
writeFileSync(`${prefix}.md`, md.join('\n'));
writeFileSync(`${prefix}.json`, JSON.stringify({ machine, cfg, cells }, null, 1) + '\n');
console.log(md.join('\n'));
