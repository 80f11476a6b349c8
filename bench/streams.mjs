// npm --prefix bench run streams: GET /events as Server-Sent Events (issue 39). plant-store serves on core 0
// (WORKERS=1); the readers and the writer run in this process on core 1, over raw sockets (no parser: each
// chunk is scanned for the plant id of its events, so the reading side stays as cheap as it can).
//   1. Idle: BENCH_STREAMS_IDLE (10000) open streams; the server's RSS before and after, and its CPU over
//      BENCH_IDLE_SECONDS (35, two heartbeats at EVENTS_HEARTBEAT_SECONDS=15) with nothing to send.
//   2. Live: BENCH_STREAMS_LIVE (1000) streams while BENCH_RATE (100) plants a second are created for
//      BENCH_SECONDS (60): every stream must get every event once, in order; the latency from the POST's 200 to
//      the event's arrival on each stream, p50 and p99.
// Env: BENCH_ENV (the service's settings, "KEY=value ..."), BENCH_ROOT (another built checkout).
import http from 'node:http';
import net from 'node:net';
import { KINDS, ROOT, cpuMs, freePort, rssMb, settings } from './lib/servers.mjs';

const env = process.env;
const idleStreams = Number(env.BENCH_STREAMS_IDLE ?? 10_000);
const idleSeconds = Number(env.BENCH_IDLE_SECONDS ?? 35);
const liveStreams = Number(env.BENCH_STREAMS_LIVE ?? 1_000);
const rate = Number(env.BENCH_RATE ?? 100);
const seconds = Number(env.BENCH_SECONDS ?? 60);
const log = (...a) => console.error(new Date().toISOString().slice(11, 19), ...a);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const port = await freePort();
const server = await KINDS.find((k) => k.name === 'plant-store').start(port, {
  root: env.BENCH_ROOT ?? ROOT,
  env: { LOG_LEVEL: 'warn', EVENTS_MAX_STREAMS: '100000', EVENTS_MAX_STREAMS_PER_TOKEN: '100000', ...settings(env.BENCH_ENV) },
});

/** A stream on a raw socket: the ids of the plants whose events arrived, with their arrival times. */
function openStream() {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const stream = { socket, open: false, ids: [], at: [], tail: '' };
    socket.setEncoding('utf8');
    socket.on('error', reject);
    socket.on('data', (chunk) => {
      const now = performance.now();
      let text = stream.tail + chunk;
      if (!stream.open) {
        const end = text.indexOf('\r\n\r\n');
        if (end < 0) return void (stream.tail = text);
        if (!text.startsWith('HTTP/1.1 200')) return reject(new Error(text.slice(0, 200)));
        stream.open = true;
        resolve(stream);
        text = text.slice(end + 4);
      }
      const last = text.lastIndexOf('\n');
      for (const m of text.slice(0, last + 1).matchAll(/^data: \{"id":(\d+),/gm)) {
        stream.ids.push(Number(m[1]));
        stream.at.push(now);
      }
      stream.tail = text.slice(last + 1);
    });
    socket.write(`GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${server.token}\r\nAccept: text/event-stream\r\n\r\n`);
  });
}

async function openMany(n) {
  const streams = [];
  for (let i = 0; i < n; i += 200) streams.push(...(await Promise.all(Array.from({ length: Math.min(200, n - i) }, openStream))));
  return streams;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
function create(id) {
  return new Promise((resolve, reject) => {
    const body = `{"id":${id},"name":"streamed ${id}"}`;
    const req = http.request({ agent, host: '127.0.0.1', port, path: '/plants', method: 'POST', headers: { authorization: `Bearer ${server.token}`, 'content-type': 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve(performance.now()) : reject(new Error(`POST ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** The plant ids of the feed's events, in its order, read page by page. */
async function feedOrder(n) {
  const ids = [];
  let after = '';
  while (ids.length < n) {
    const res = await fetch(`http://127.0.0.1:${port}/events?limit=1000${after}`, { headers: { authorization: `Bearer ${server.token}` } });
    const page = await res.text();
    const found = [...page.matchAll(/"id":"(msg_[^"]+)"[^{]*"data":\{"id":(\d+),/g)];
    if (found.length === 0) break;
    ids.push(...found.map((m) => Number(m[2])));
    after = `&after=${found.at(-1)[1]}`;
  }
  return ids;
}

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];
try {
  // 1. Idle streams.
  await sleep(1_000);
  const rssBefore = rssMb(server.pid);
  const idle = await openMany(idleStreams);
  await sleep(2_000);
  const rssOpen = rssMb(server.pid);
  const cpu0 = cpuMs(server.pid);
  await sleep(idleSeconds * 1000);
  const cpuIdle = cpuMs(server.pid) - cpu0;
  log(`idle: ${idle.length} streams, server RSS ${rssBefore.toFixed(0)} -> ${rssOpen.toFixed(0)} MB (${(((rssOpen - rssBefore) * 1024) / idle.length).toFixed(1)} kB a stream); CPU over ${idleSeconds} s: ${cpuIdle.toFixed(0)} ms`);
  for (const s of idle) s.socket.destroy();
  await sleep(2_000);

  // 2. Live streams under writes.
  const live = await openMany(liveStreams);
  await sleep(1_000);
  const acked = new Map();
  const total = rate * seconds;
  const t0 = performance.now();
  const cpu1 = cpuMs(server.pid);
  const writes = [];
  for (let i = 0; i < total; i++) {
    const due = t0 + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    const id = i + 1;
    writes.push(create(id).then((at) => acked.set(id, at)));
  }
  await Promise.all(writes);
  const deadline = performance.now() + 30_000;
  while (live.some((s) => s.ids.length < total) && performance.now() < deadline) await sleep(100);
  const cpuLive = cpuMs(server.pid) - cpu1;
  const latencies = [];
  let complete = 0;
  // The feed's order is commit order (concurrent POSTs commit in groups): every stream must hold every plant
  // once, in the one order the feed gives, which a page read afterwards shows.
  const feed = await feedOrder(total);
  for (const s of live) {
    if (s.ids.length === total && s.ids.every((id, i) => id === feed[i])) complete++;
    s.ids.forEach((id, i) => latencies.push(s.at[i] - acked.get(id)));
    s.socket.destroy();
  }
  latencies.sort((a, b) => a - b);
  log(
    `live: ${live.length} streams, ${total} plants at ${rate}/s: ${complete} of ${live.length} streams got every event once, in order; ` +
      `POST 200 -> arrival p50 ${pct(latencies, 50).toFixed(1)} ms, p99 ${pct(latencies, 99).toFixed(1)} ms, max ${latencies.at(-1).toFixed(1)} ms; server CPU ${(cpuLive / seconds / 10).toFixed(0)}% of a core`,
  );
} finally {
  agent.destroy();
  await server.stop();
}
