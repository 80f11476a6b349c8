// npm --prefix bench run replication-cost (a stage of npm run bench): durable POST /plants at c=100 with
// replication off and on (REPLICA_URL to a file:// replica in the temp dir, Litestream beside the store), one
// fresh plant-store process at a time on core 0 and wrk on core 1, in rounds that reverse the order every other
// round. Per cell: req/s, the server's CPU time per answer (every thread of the process and of its children, so
// Litestream's too, from /proc), latency, max RSS, and with replication on the lag /metrics reports (sampled
// every 200 ms). Each cell is given as a ratio to the same round's cell without replication.
// Lag on a longer run, replica growth and restore time: replication.mjs. Env: BENCH_ROUNDS (2), BENCH_SECONDS
// (10), BENCH_WARMUP (3), BENCH_CONNECT_PAUSE_MS (300), BENCH_MACHINE (the machine's name in the results;
// default the host name), BENCH_OUT (results file prefix; default results/replication-cost). About a minute.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, hostname, loadavg, release, tmpdir } from 'node:os';
import { join } from 'node:path';
import { BENCH_DIR, KINDS, ROOT, cpuMs, freePort, rssMb } from './lib/servers.mjs';
import { replicationSection } from './lib/report.mjs';
import { runWrk } from './lib/wrk.mjs';

const env = process.env;
const cfg = {
  rounds: Number(env.BENCH_ROUNDS ?? 2),
  // Longer than the other cells' 4 s: Litestream syncs once a second, and its first snapshot falls in the warm-up.
  seconds: Math.max(Number(env.BENCH_REPLICATION_SECONDS ?? 10), 4),
  warmup: Number(env.BENCH_WARMUP ?? 3),
  conns: 100,
  connectPauseMs: Number(env.BENCH_CONNECT_PAUSE_MS ?? 300),
};
const log = (...a) => console.error(new Date().toISOString().slice(11, 19), ...a);
const quantile = (xs, q) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))];
let salt = 1 + (Math.floor(Date.now() / 60_000) % 8000) * 1000 + 800;
const machine = {
  name: env.BENCH_MACHINE ?? hostname(), cpu: cpus()[0]?.model, cores: cpus().length, kernel: release(), node: process.version,
  loadBefore: loadavg(), started: new Date().toISOString(),
};
log('machine', JSON.stringify(machine), 'config', JSON.stringify(cfg));

/** The replication lag /metrics reports now, in seconds (NaN when it reports none). */
async function lagNow(port, token) {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { authorization: `Bearer ${token}` } })).text();
  return Number(/^plant_store_replication_lag_seconds\{replica="file"\} (\S+)$/m.exec(text)?.[1] ?? NaN);
}

async function cell(replication, round) {
  const replica = replication === 'on' ? mkdtempSync(join(tmpdir(), 'bench-replica-')) : undefined;
  const port = await freePort();
  const server = await KINDS.find((k) => k.name === 'plant-store').start(port, { env: replica ? { REPLICA_URL: `file://${replica}` } : {} });
  try {
    const wenv = { BENCH_TOKEN: server.token };
    const run = (seconds) => runWrk({ script: 'post', port, conns: cfg.conns, seconds, salt: salt++, connectPauseMs: cfg.connectPauseMs, env: wenv });
    await run(cfg.warmup);
    const metricsToken = replica && execFileSync(process.execPath, [join(ROOT, 'bin/plant-store.js'), 'token', 'create', '--scopes', 'metrics:read', '--name', 'bench-metrics'], {
      env: { ...env, DATABASE_URL: server.databaseUrl }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'],
    }).trim().split('\n').pop();
    const lags = [];
    let rssMax = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        rssMax = Math.max(rssMax, rssMb(server.pid) || 0);
        if (replica) lags.push(await lagNow(port, metricsToken));
        await new Promise((r) => setTimeout(r, replica ? 200 : 250));
      }
    })();
    const cpu0 = cpuMs(server.pid);
    const r = await run(cfg.seconds);
    const cpu = cpuMs(server.pid) - cpu0;
    sampling = false;
    await sampler;
    const ok = Object.entries(r.statuses).reduce((n, [k, v]) => n + (k >= 200 && k <= 299 ? v : 0), 0);
    const lag = lags.filter(Number.isFinite);
    const out = {
      round, replication, rps: r.requests / r.busy_s, cpuUs: (1000 * cpu) / r.requests, p50_ms: r.p50_us / 1000, p99_ms: r.p99_us / 1000,
      max_ms: r.max_us / 1000, non2xx: r.requests - ok, socketErrors: r.errors.connect + r.errors.read + r.errors.write + r.errors.timeout,
      rssMaxMb: Math.round(rssMax), load1: loadavg()[0],
      ...(lag.length && { lag: { p50: quantile(lag, 0.5), p99: quantile(lag, 0.99), max: Math.max(...lag), samples: lag.length } }),
    };
    log(`replication ${replication.padEnd(3)} round ${round}: ${Math.round(out.rps)} req/s  ${Math.round(out.cpuUs)} µs CPU/req  p50 ${out.p50_ms.toFixed(2)} ms  p99 ${out.p99_ms.toFixed(2)} ms  non2xx ${out.non2xx}  err ${out.socketErrors}  rss ${out.rssMaxMb} MB` +
      (out.lag ? `  lag p50 ${out.lag.p50} p99 ${out.lag.p99} max ${out.lag.max} s` : ''));
    return out;
  } finally {
    await server.stop();
    if (replica) rmSync(replica, { recursive: true, force: true });
  }
}

const cells = [];
for (let round = 1; round <= cfg.rounds; round++) {
  for (const replication of round % 2 === 1 ? ['off', 'on'] : ['on', 'off']) cells.push(await cell(replication, round));
}
machine.loadAfter = loadavg();
machine.finished = new Date().toISOString();
const result = { machine, cfg, cells };
const prefix = env.BENCH_OUT ?? join(BENCH_DIR, 'results', 'replication-cost');
writeFileSync(`${prefix}.json`, JSON.stringify(result, null, 1) + '\n');
const md = replicationSection(result, '#').join('\n');
writeFileSync(`${prefix}.md`, md);
console.log(md);
