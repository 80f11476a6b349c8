// npm --prefix bench run feed: the events feed's two cells on one plant-store (bin/plant-store.js serve, one
// process, a fresh SQLite file with full durability) pinned to core 0, clients on core 1.
//
// 1. Paging: a feed of BENCH_EVENTS (100,000) events (newPlant, made by the service's own `import`), read by wrk
//    at c=1 and c=100 as pages of the default limit (100), each request the next page of one of 100 readers
//    that start spread over the feed and follow Link (wrk/events.lua); warm-up, then measured, in rounds.
// 2. Long-poll wake: BENCH_READERS (1,000) connections each with `GET /events?after=<the last event>&wait=30`
//    waiting (plant_store_events_waiting says so), then one POST /plants; each reader's latency is from the
//    POST's answer (its first byte) to the first byte of the reader's page, which must hold exactly that event.
//    BENCH_WAKES (5) times, each reader asking again after the event it got. Readers and the POST are raw
//    sockets whose handlers only take the time, so the client adds little to what it measures.
//
// The waiting places: all the readers use the one bench token, so the server runs with
// EVENTS_MAX_WAITING_PER_TOKEN raised to BENCH_READERS (default 4) and EVENTS_MAX_WAITING to at least it
// (default 1000). Both bound admission only; the wake path is the same for one token or many.
//
// Writes results/feed.{md,json}. Env: BENCH_EVENTS, BENCH_READERS, BENCH_WAKES, BENCH_ROUNDS (2), BENCH_SECONDS
// (4), BENCH_WARMUP (2), BENCH_CONNS (1,100), BENCH_CONNECT_PAUSE_MS (300), BENCH_OUT (default results/feed).
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import net from 'node:net';
import { cpus, loadavg, release } from 'node:os';
import { join } from 'node:path';
import { BENCH_DIR, KINDS, LOAD_CORE, ROOT, cpuMs, freePort, rssMb } from './lib/servers.mjs';
import { importPlants } from './lib/cells.mjs';
import { runWrk } from './lib/wrk.mjs';

const env = process.env;
const cfg = {
  events: Number(env.BENCH_EVENTS ?? 100_000),
  readers: Number(env.BENCH_READERS ?? 1000),
  wakes: Number(env.BENCH_WAKES ?? 5),
  rounds: Number(env.BENCH_ROUNDS ?? 2),
  seconds: Number(env.BENCH_SECONDS ?? 4),
  warmup: Number(env.BENCH_WARMUP ?? 2),
  conns: (env.BENCH_CONNS ?? '1,100').split(',').map(Number),
  connectPauseMs: Number(env.BENCH_CONNECT_PAUSE_MS ?? 300),
  pagingReaders: 100,
};
const log = (...a) => console.error(new Date().toISOString().slice(11, 19), ...a);
const median = (xs) => xs[Math.floor((xs.length - 1) / 2)];
const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];

execFileSync('taskset', ['-pc', LOAD_CORE, String(process.pid)], { stdio: 'ignore' });
const machine = { cpu: cpus()[0]?.model, cores: cpus().length, kernel: release(), node: process.version, loadBefore: loadavg(), started: new Date().toISOString() };
log('machine', JSON.stringify(machine), 'config', JSON.stringify(cfg));

const port = await freePort();
const serverEnv = { EVENTS_MAX_WAITING_PER_TOKEN: String(cfg.readers), EVENTS_MAX_WAITING: String(Math.max(1000, cfg.readers)) };
const server = { ...(await KINDS.find((k) => k.name === 'plant-store').start(port, { env: serverEnv })), port };
const base = `http://127.0.0.1:${port}`;
const auth = { authorization: `Bearer ${server.token}` };
const metricsToken = execFileSync(process.execPath, [join(ROOT, 'bin/plant-store.js'), 'token', 'create', '--scopes', 'metrics:read', '--name', 'bench-metrics'], {
  env: { ...env, DATABASE_URL: server.databaseUrl }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'],
}).trim().split('\n').pop().trim();

/** A keep-alive HTTP/1.1 connection that sends one request at a time and notes when its answer's first byte came. */
class Conn {
  static open(port) {
    return new Promise((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1', () => resolve(new Conn(socket)));
      socket.once('error', reject);
    });
  }

  constructor(socket) {
    this.socket = socket;
    socket.setNoDelay(true);
    this.chunks = [];
    socket.on('data', (chunk) => {
      this.at ??= performance.now();
      this.chunks.push(chunk);
      this.parse();
    });
    socket.on('error', (err) => this.reject?.(err));
    socket.on('close', () => this.reject?.(new Error('connection closed')));
  }

  request(text) {
    this.at = undefined;
    this.chunks = [];
    return new Promise((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
      this.socket.write(text);
    });
  }

  parse() {
    const buf = Buffer.concat(this.chunks);
    const end = buf.indexOf('\r\n\r\n');
    if (end < 0) return;
    const head = buf.subarray(0, end).toString('latin1');
    const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
    if (buf.length < end + 4 + length) return;
    const done = this.resolve;
    this.resolve = this.reject = undefined;
    done({ status: Number(head.slice(9, 12)), body: buf.subarray(end + 4, end + 4 + length).toString(), at: this.at });
  }
}

const paging = [];
const wakes = [];
let feed;
try {
  let t0 = performance.now();
  importPlants(server, 1, cfg.events);
  const importSeconds = (performance.now() - t0) / 1000;

  // The whole feed once, 1000 a page: its length, and the cursors the paging readers start from.
  t0 = performance.now();
  const ids = [];
  for (let path = '/events?limit=1000'; path;) {
    const res = await fetch(base + path, { headers: auth });
    if (res.status !== 200) throw new Error(`GET ${path}: ${res.status}`);
    for (const m of (await res.text()).matchAll(/"id":"(msg_[^"]+)"/g)) ids.push(m[1]);
    path = /^<([^>]+)>; rel="next"$/.exec(res.headers.get('link') ?? '')?.[1];
  }
  if (ids.length !== cfg.events) throw new Error(`the feed holds ${ids.length} events, not ${cfg.events}`);
  feed = { events: ids.length, importSeconds, readSeconds: (performance.now() - t0) / 1000, idleRssMb: Math.round(rssMb(server.pid)) };
  log(`feed: ${ids.length} events imported in ${importSeconds.toFixed(1)} s, read once (1000 a page) in ${feed.readSeconds.toFixed(1)} s`);
  const cursors = Array.from({ length: cfg.pagingReaders }, (_, k) => (k === 0 ? '' : ids[Math.floor((k * ids.length) / cfg.pagingReaders) - 1])).join(',');

  let salt = 1;
  for (let round = 1; round <= cfg.rounds; round++) {
    for (const conns of round % 2 === 1 ? cfg.conns : [...cfg.conns].reverse()) {
      const run = (seconds) => runWrk({ script: 'events', port, conns, seconds, salt: salt++, connectPauseMs: cfg.connectPauseMs, env: { BENCH_TOKEN: server.token, BENCH_CURSORS: cursors } });
      await run(cfg.warmup);
      let rssMax = 0;
      const sampler = setInterval(() => (rssMax = Math.max(rssMax, rssMb(server.pid) || 0)), 250);
      const cpu0 = cpuMs(server.pid);
      const r = await run(cfg.seconds);
      const cpuUs = (1000 * (cpuMs(server.pid) - cpu0)) / r.requests;
      clearInterval(sampler);
      const cell = {
        round, conns, cpuUs, requests: r.requests, bytes: r.bytes, pagesPerS: r.requests / r.busy_s, mbPerS: r.bytes / 1e6 / (r.duration_us / 1e6), p50_ms: r.p50_us / 1000, p99_ms: r.p99_us / 1000, max_ms: r.max_us / 1000,
        statuses: r.statuses, socketErrors: r.errors.connect + r.errors.read + r.errors.write + r.errors.timeout, rssMaxMb: Math.round(rssMax), load1: loadavg()[0],
      };
      paging.push(cell);
      log(`paging c=${String(conns).padEnd(3)} round ${round}: ${Math.round(cell.pagesPerS)} pages/s ${Math.round(cell.cpuUs)} µs CPU/page (${cell.mbPerS.toFixed(1)} MB/s)  p50 ${cell.p50_ms.toFixed(2)} ms  p99 ${cell.p99_ms.toFixed(2)} ms  statuses ${JSON.stringify(r.statuses)}  err ${cell.socketErrors}  rss ${cell.rssMaxMb} MB`);
    }
  }

  // Long-poll wake.
  const readers = [];
  for (let i = 0; i < cfg.readers; i += 100) readers.push(...(await Promise.all(Array.from({ length: Math.min(100, cfg.readers - i) }, () => Conn.open(port)))));
  const poster = await Conn.open(port);
  let cursor = ids.at(-1);
  for (let wake = 1; wake <= cfg.wakes; wake++) {
    const pages = readers.map((r) => r.request(`GET /events?after=${cursor}&wait=30 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${server.token}\r\n\r\n`));
    const armedIn = await waitingReaches(cfg.readers);
    const plantId = 1_000_000 + wake;
    const body = `{"id":${plantId},"name":"Wake ${wake}"}`;
    const cpu0 = cpuMs(server.pid);
    const sent = performance.now();
    const answer = await poster.request(`POST /plants HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${server.token}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    if (answer.status !== 200) throw new Error(`POST /plants: ${answer.status} ${answer.body}`);
    const got = await Promise.all(pages);
    const cpuWakeMs = cpuMs(server.pid) - cpu0;
    const wrong = got.filter((p) => p.status !== 200 || !p.body.includes(`"id":${plantId},`) || (p.body.match(/"type":/g) ?? []).length !== 1);
    if (wrong.length) throw new Error(`${wrong.length} readers got something else than the one event, e.g. ${wrong[0].status} ${wrong[0].body.slice(0, 200)}`);
    cursor = /"id":"(msg_[^"]+)"/.exec(got[0].body)[1];
    const fromAnswer = got.map((p) => p.at - answer.at).sort((a, b) => a - b);
    const fromSend = got.map((p) => p.at - sent).sort((a, b) => a - b);
    const w = {
      wake, readers: got.length, armedInMs: armedIn, postMs: answer.at - sent, cpuWakeMs,
      fromAnswer: { min: fromAnswer[0], p50: pct(fromAnswer, 50), p99: pct(fromAnswer, 99), max: fromAnswer.at(-1) },
      fromSend: { min: fromSend[0], p50: pct(fromSend, 50), p99: pct(fromSend, 99), max: fromSend.at(-1) },
      beforeAnswer: fromAnswer.filter((x) => x < 0).length,
    };
    wakes.push(w);
    log(`wake ${wake}: ${got.length} readers armed in ${armedIn.toFixed(0)} ms; POST answered in ${w.postMs.toFixed(2)} ms; server CPU ${cpuWakeMs.toFixed(0)} ms; readers after its answer min ${w.fromAnswer.min.toFixed(2)} p50 ${w.fromAnswer.p50.toFixed(2)} p99 ${w.fromAnswer.p99.toFixed(2)} max ${w.fromAnswer.max.toFixed(2)} ms (${w.beforeAnswer} before it)`);
  }
  for (const r of [...readers, poster]) r.socket.destroy();
} finally {
  await server.stop();
}

/** Polls GET /metrics until plant_store_events_waiting is at least n; returns the ms it took. */
async function waitingReaches(n) {
  const t0 = performance.now();
  for (;;) {
    const text = await (await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } })).text();
    const now = Number(/^plant_store_events_waiting(?:\{[^}]*\})? (\d+)/m.exec(text)?.[1] ?? 0);
    if (now >= n) return performance.now() - t0;
    if (performance.now() - t0 > 20_000) throw new Error(`only ${now} of ${n} readers waiting after 20 s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

machine.loadAfter = loadavg();
machine.finished = new Date().toISOString();
const f = (x) => x.toFixed(2);
const md = [
  '# plant-store events feed cells', '',
  `Produced by \`npm --prefix bench run feed\` (bench/feed.mjs), ${machine.started} – ${machine.finished}: ${machine.cpu}, ${machine.cores} cores, kernel ${machine.kernel}, Node ${machine.node}. ` +
    `One \`plant-store serve\` (one process, a fresh SQLite file, full durability, \`LOG_LEVEL=info\`, \`EVENTS_MAX_WAITING_PER_TOKEN=${serverEnv.EVENTS_MAX_WAITING_PER_TOKEN}\`, \`EVENTS_MAX_WAITING=${serverEnv.EVENTS_MAX_WAITING}\`) pinned to core 0; wrk and the readers on core 1. ` +
    `Load average before ${machine.loadBefore.map((v) => v.toFixed(2)).join(' / ')}, after ${machine.loadAfter.map((v) => v.toFixed(2)).join(' / ')}.`, '',
  '## Paging', '',
  `A feed of ${feed.events} newPlant events (imported in ${feed.importSeconds.toFixed(1)} s with \`plant-store import\`; read once, 1000 a page, in ${feed.readSeconds.toFixed(1)} s). ` +
    `Each request is \`GET /events\` at the default limit (100 events) after a cursor: the next page of one of ${cfg.pagingReaders} readers that start spread over the feed and follow \`Link\`, back to the start at its end (bench/wrk/events.lua). ` +
    `${cfg.warmup} s warm-up then ${cfg.seconds} s measured per cell, ${cfg.rounds} rounds. MB/s counts the whole answers, headers included; server CPU is every thread of the server process over the measured run, from /proc, per page.`, '',
  '| round | c | pages/s | server CPU µs/page | events/s | MB/s | KB a page | p50 ms | p99 ms | max ms | statuses | max RSS MB |', '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|',
  ...paging.map((c) => `| ${c.round} | ${c.conns} | ${Math.round(c.pagesPerS)} | ${Math.round(c.cpuUs)} | ${Math.round(c.pagesPerS * 100)} | ${c.mbPerS.toFixed(1)} | ${(c.bytes / c.requests / 1000).toFixed(1)} | ${f(c.p50_ms)} | ${f(c.p99_ms)} | ${c.max_ms.toFixed(1)} | ${Object.entries(c.statuses).map(([k, v]) => `${k}×${v}`).join(' ')}${c.socketErrors ? `, ${c.socketErrors} socket errors` : ''} | ${c.rssMaxMb} |`),
  '',
  '## Long-poll wake', '',
  `${cfg.readers} connections each waiting in \`GET /events?after=<the last event>&wait=30\` (all of them counted by \`plant_store_events_waiting\` before the write), then one \`POST /plants\` on another connection. ` +
    'Latency of each reader from the first byte of the POST\'s answer (and from the moment the POST was sent) to the first byte of its page, which held exactly the new event. Server CPU: every thread of the server from just before the POST until every reader had its page (/proc; 10 ms ticks), the POST included. A negative figure: the reader had its page before the POST\'s answer came.', '',
  '| wake | readers | POST answered in ms | server CPU ms, POST to the last page | after the POST\'s answer: min / p50 / p99 / max ms | after the POST was sent: p50 / p99 / max ms | readers before the answer |', '|---:|---:|---:|---:|---|---|---:|',
  ...wakes.map((w) => `| ${w.wake} | ${w.readers} | ${f(w.postMs)} | ${w.cpuWakeMs.toFixed(0)} | ${f(w.fromAnswer.min)} / ${f(w.fromAnswer.p50)} / ${f(w.fromAnswer.p99)} / ${f(w.fromAnswer.max)} | ${f(w.fromSend.p50)} / ${f(w.fromSend.p99)} / ${f(w.fromSend.max)} | ${w.beforeAnswer} |`),
  '',
  `Medians over the wakes, after the POST's answer: p50 ${f(median(wakes.map((w) => w.fromAnswer.p50).sort((a, b) => a - b)))} ms, p99 ${f(median(wakes.map((w) => w.fromAnswer.p99).sort((a, b) => a - b)))} ms, max ${f(median(wakes.map((w) => w.fromAnswer.max).sort((a, b) => a - b)))} ms.`, '',
];
const prefix = env.BENCH_OUT ?? join(BENCH_DIR, 'results', 'feed');
writeFileSync(`${prefix}.md`, md.join('\n'));
writeFileSync(`${prefix}.json`, JSON.stringify({ machine, cfg, serverEnv, feed, paging, wakes }, null, 1) + '\n');
console.log(md.join('\n'));
