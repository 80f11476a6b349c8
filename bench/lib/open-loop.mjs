// Constant-rate (open-model) load generator: request i is due at start + i/rate whatever happened before, and
// its latency is measured from that due time, so a stall shows as the queue it builds (no coordinated
// omission). wrk 4.1 is closed-model and only partly corrects; wrk2 is not in Debian or on npm, and
// autocannon has no constant-rate mode, hence these lines.
// Usage: node open-loop.mjs URL RATE SECONDS CONNECTIONS   (env BENCH_TOKEN, BENCH_SALT); prints one JSON line.
// URL is the collection (…/plants): every request POSTs a new plant, unless BENCH_GET_EVERY=n makes every n-th
// one a GET /plants/{id} of a seeded plant (BENCH_SEEDED plants from BENCH_SEED_BASE+1, as lib/servers.mjs seeds
// them). SIGTERM stops the sending early (takeover.mjs): what was sent is answered, then reported. Each failure
// (no answer, or not 2xx) is counted by its error code or status, and the first 50 are listed with their time.
import http from 'node:http';

const [url, rateArg, secondsArg, connsArg] = process.argv.slice(2);
const rate = Number(rateArg);
const seconds = Number(secondsArg);
const target = new URL(url);
const agent = new http.Agent({ keepAlive: true, maxSockets: Number(connsArg) });
const auth = `Bearer ${process.env.BENCH_TOKEN}`;
const base = Number(process.env.BENCH_SALT) * 1e9;
const getEvery = Number(process.env.BENCH_GET_EVERY ?? 0);
const seeded = Number(process.env.BENCH_SEEDED ?? 1000);
const seedBase = Number(process.env.BENCH_SEED_BASE ?? 1_000_000);
let total = Math.round(rate * seconds);
const latencies = new Float64Array(total);
let done = 0;
let sent = 0;
let errors = 0;
let non2xx = 0;
const statuses = {};
const errorCodes = {};
const failures = [];
// nth: the request's place on its connection (1: a new connection); for a later one, idleMs: how long the connection
// had been idle since its previous answer (to the failure), and previous: that request's method and its answer's
// Connection header; due: when the request was due (epoch ms).
const failed = (method, what, req, due) => {
  if (failures.length >= 50) return;
  const socket = req.socket;
  const nth = socket?.benchRequests;
  failures.push({
    at: Date.now(), due: Math.round(startedAt - start + due), method, what, nth,
    ...(nth > 1 && { idleMs: Math.round(performance.now() - socket.benchIdleSince), previous: `${socket.benchMethod} answered with Connection: ${socket.benchConnection ?? null}` }),
  });
};

function send(i, due) {
  const get = getEvery > 0 && i % getEvery === getEvery - 1;
  const body = get ? '' : `{"id":${base + i + 1},"name":"Plant ${i}","tag":"bench"}`;
  const method = get ? 'GET' : 'POST';
  const req = http.request(
    { agent, host: target.hostname, port: target.port, path: get ? `${target.pathname}/${seedBase + 1 + (i % seeded)}` : target.pathname, method,
      headers: get ? { authorization: auth } : { authorization: auth, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
    (res) => {
      const socket = res.socket;
      res.resume();
      res.on('end', () => {
        latencies[i] = performance.now() - due;
        if (socket) (socket.benchIdleSince = performance.now()), (socket.benchConnection = res.headers.connection), (socket.benchMethod = method);
        statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
        if (res.statusCode < 200 || res.statusCode > 299) {
          non2xx++;
          failed(method, res.statusCode, req, due);
        }
        finish();
      });
    },
  );
  req.on('socket', (socket) => (socket.benchRequests = (socket.benchRequests ?? 0) + 1));
  req.on('error', (err) => {
    latencies[i] = performance.now() - due;
    errors++;
    errorCodes[err.code ?? err.message] = (errorCodes[err.code ?? err.message] ?? 0) + 1;
    failed(method, err.code ?? err.message, req, due);
    finish();
  });
  req.end(body);
}

function finish() {
  if (++done === total) report();
}

const start = performance.now() + 50;
const startedAt = Date.now() + 50;
function tick() {
  const now = performance.now();
  while (sent < total && start + (sent * 1000) / rate <= now) {
    send(sent, start + (sent * 1000) / rate);
    sent++;
  }
  // A 1 ms timer, not a spin: latency counts from the due time anyway, and a spinning generator would
  // compete for its core with its own socket handling.
  if (sent < total) setTimeout(tick, 1);
}
setTimeout(tick, 50);
process.on('SIGTERM', () => {
  total = sent;
  if (done === total) report();
});
// A bound on the whole run: whatever has not answered 30 s after the last send counts as an error.
setTimeout(() => {
  errors += total - done;
  for (let i = 0; i < total; i++) if (latencies[i] === 0) latencies[i] = 30_000 + seconds * 1000;
  report();
}, seconds * 1000 + 30_000).unref();

let reported = false;
function report() {
  if (reported) return;
  reported = true;
  const sorted = Float64Array.from(latencies.subarray(0, total)).sort();
  const pct = (p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
  const elapsed = (performance.now() - start) / 1000;
  console.log(`BENCHJSON ${JSON.stringify({
    rate, seconds, requests: total, achieved_rps: total / elapsed, errors, non2xx, statuses,
    p50_ms: pct(50), p90_ms: pct(90), p99_ms: pct(99), p999_ms: pct(99.9), max_ms: sorted[sorted.length - 1],
    startedAt, ...(errors && { errorCodes }), ...(failures.length && { failures }),
  })}`);
  agent.destroy();
  process.exit(0);
}
