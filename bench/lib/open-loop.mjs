// Constant-rate (open-model) load generator: request i is due at start + i/rate whatever happened before, and
// its latency is measured from that due time, so a stall shows as the queue it builds (no coordinated
// omission). wrk 4.1 is closed-model and only partly corrects; wrk2 is not in Debian or on npm, and
// autocannon has no constant-rate mode, hence these 80 lines.
// Usage: node open-loop.mjs URL RATE SECONDS CONNECTIONS   (env BENCH_TOKEN, BENCH_SALT); prints one JSON line.
import http from 'node:http';

const [url, rateArg, secondsArg, connsArg] = process.argv.slice(2);
const rate = Number(rateArg);
const seconds = Number(secondsArg);
const target = new URL(url);
const agent = new http.Agent({ keepAlive: true, maxSockets: Number(connsArg) });
const auth = `Bearer ${process.env.BENCH_TOKEN}`;
const base = Number(process.env.BENCH_SALT) * 1e9;
const total = Math.round(rate * seconds);
const latencies = new Float64Array(total);
let done = 0;
let sent = 0;
let errors = 0;
let non2xx = 0;
const statuses = {};

function send(i, due) {
  const body = `{"id":${base + i + 1},"name":"Plant ${i}","tag":"bench"}`;
  const req = http.request(
    { agent, host: target.hostname, port: target.port, path: target.pathname, method: 'POST',
      headers: { authorization: auth, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
    (res) => {
      res.resume();
      res.on('end', () => {
        latencies[i] = performance.now() - due;
        statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
        if (res.statusCode < 200 || res.statusCode > 299) non2xx++;
        finish();
      });
    },
  );
  req.on('error', () => {
    latencies[i] = performance.now() - due;
    errors++;
    finish();
  });
  req.end(body);
}

function finish() {
  if (++done === total) report();
}

const start = performance.now() + 50;
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
  const sorted = Float64Array.from(latencies).sort();
  const pct = (p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
  const elapsed = (performance.now() - start) / 1000;
  console.log(`BENCHJSON ${JSON.stringify({
    rate, seconds, requests: total, achieved_rps: total / elapsed, errors, non2xx, statuses,
    p50_ms: pct(50), p90_ms: pct(90), p99_ms: pct(99), p999_ms: pct(99.9), max_ms: sorted[sorted.length - 1],
  })}`);
  agent.destroy();
  process.exit(0);
}
