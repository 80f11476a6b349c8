// npm --prefix bench run count-fairness: what counting costs another client (issue 40). plant-store serves a
// store of 200,000 plants (lib/big-db.mjs: `Plant number N`, so `q=plant` matches every one) on core 0; from
// core 1, token B reads GET /plants/5 in a closed loop at c=1, first alone (baseline), then while token A runs
// 8 loops of `GET /plants?q=plant&limit=20` with `Prefer: count=exact` (each count reads 200,000 matches).
// A's loops honour Retry-After on a 429 or 503, as the document asks (BENCH_COUNT_IGNORE_RETRY=1: they send
// again at once). Target: B's p50 under load within 2x of its baseline.
//
// Env: BENCH_COUNT_ROWS (200000), BENCH_SECONDS (8), BENCH_COUNT_LOOPS (8), BENCH_ROUNDS (2),
// BENCH_ROOT (another built checkout to serve, e.g. the build before the count lane), BENCH_ENV (the service's
// settings, "KEY=value ...").
import { execFileSync } from 'node:child_process';
import http from 'node:http';
import { join } from 'node:path';
import { KINDS, ROOT, freePort, settings } from './lib/servers.mjs';
import { bigDatabase, warmPageCache } from './lib/big-db.mjs';

const env = process.env;
const rows = Number(env.BENCH_COUNT_ROWS ?? 200_000);
const seconds = Number(env.BENCH_SECONDS ?? 8);
const loops = Number(env.BENCH_COUNT_LOOPS ?? 8);
const rounds = Number(env.BENCH_ROUNDS ?? 2);
const root = env.BENCH_ROOT ?? ROOT;
const ignoreRetry = env.BENCH_COUNT_IGNORE_RETRY === '1';
const log = (...a) => console.error(new Date().toISOString().slice(11, 19), ...a);

const agent = new http.Agent({ keepAlive: true, maxSockets: loops + 1 });

/**
 * One request; resolves with its status, its Retry-After and X-Total-Count, and its time in ms. Sent again
 * once when a kept-alive connection turns out closed by the server's keep-alive timeout meanwhile.
 */
function request(port, path, token, headers = {}, again = true) {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.request({ agent, host: '127.0.0.1', port, path, headers: { authorization: `Bearer ${token}`, ...headers } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode, retryAfter: res.headers['retry-after'], total: res.headers['x-total-count'], ms: performance.now() - t0 }));
    });
    req.on('error', (err) => (again && err.code === 'ECONNRESET' && req.reusedSocket ? resolve(request(port, path, token, headers, false)) : reject(err)));
    req.end();
  });
}

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

/** B's reads for `ms`: latencies sorted. */
async function reads(port, token, ms) {
  const times = [];
  const end = performance.now() + ms;
  while (performance.now() < end) {
    const r = await request(port, '/plants/5', token);
    if (r.status !== 200) throw new Error(`GET /plants/5 answered ${r.status}`);
    times.push(r.ms);
  }
  return times.sort((a, b) => a - b);
}

/** A's counting loops until `stop()`: how many answers of each status, and the counts' times. */
function countLoops(port, token) {
  let stopped = false;
  const statuses = {};
  const countMs = [];
  const loop = async () => {
    while (!stopped) {
      const r = await request(port, '/plants?q=plant&limit=20', token, { prefer: 'count=exact' });
      statuses[r.status] = (statuses[r.status] ?? 0) + 1;
      if (r.status === 200) {
        if (r.total !== String(rows)) throw new Error(`X-Total-Count ${r.total}, expected ${rows}`);
        countMs.push(r.ms);
      } else if (r.status === 429 || r.status === 503) {
        if (!ignoreRetry) await new Promise((resolve) => setTimeout(resolve, 1000 * Number(r.retryAfter ?? 1)));
      } else throw new Error(`a counted list answered ${r.status}`);
    }
  };
  const running = Array.from({ length: loops }, loop);
  return async () => {
    stopped = true;
    await Promise.all(running);
    return { statuses, countMs: countMs.sort((a, b) => a - b) };
  };
}

const fmt = (times) => `p50 ${percentile(times, 50).toFixed(2)} ms, p99 ${percentile(times, 99).toFixed(2)} ms, max ${times.at(-1).toFixed(1)} ms (${times.length} reads)`;

const db = await bigDatabase(rows, log);
log(`warmed ${db.file} in ${warmPageCache(db.file).toFixed(1)} s`);
const plantStore = KINDS.find((k) => k.name === 'plant-store');
const port = await freePort();
const server = await plantStore.start(port, { root, dbFile: db.file, env: { LOG_LEVEL: 'warn', ...settings(env.BENCH_ENV) } });
try {
  const cli = join(root, 'bin/plant-store.js');
  const other = execFileSync(process.execPath, [cli, 'token', 'create', '--scopes', 'plants:read', '--name', 'count-loops'], { env: { ...process.env, DATABASE_URL: server.databaseUrl }, encoding: 'utf8' }).trim().split('\n').pop().trim();
  await reads(port, server.token, 1000); // warm-up
  const results = [];
  for (let round = 1; round <= rounds; round++) {
    const baseline = await reads(port, server.token, seconds * 1000);
    log(`round ${round} baseline: ${fmt(baseline)}`);
    const stop = countLoops(port, other);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const loaded = await reads(port, server.token, seconds * 1000);
    const { statuses, countMs } = await stop();
    const ratio = percentile(loaded, 50) / percentile(baseline, 50);
    log(`round ${round} under ${loops} counting loops: ${fmt(loaded)}; p50 ${ratio.toFixed(2)}x baseline; counted lists ${JSON.stringify(statuses)}, a counted list's p50 ${countMs.length ? percentile(countMs, 50).toFixed(1) : '-'} ms`);
    results.push({ round, baselineP50: percentile(baseline, 50), loadedP50: percentile(loaded, 50), loadedP99: percentile(loaded, 99), loadedMax: loaded.at(-1), ratio, statuses });
  }
  console.log(JSON.stringify({ rows, loops, seconds, root, ignoreRetry, results }, null, 1));
} finally {
  agent.destroy();
  await server.stop();
}
