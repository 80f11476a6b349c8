// npm --prefix bench run streams: GET /events as Server-Sent Events (issue 39), for each server of
// BENCH_STREAM_KINDS (default "floor-stream,plant-store") in turn. The server runs on core 0 (plant-store with
// WORKERS=1; floor-stream is bare node:http, each event one write per reader: servers/floor-stream.mjs); the
// readers and the writer run in this process on core 1, over raw sockets (no parser: each chunk is scanned for
// the plant id of its events, so the reading side stays as cheap as it can).
//   1. Idle: BENCH_STREAMS_IDLE (10000; 0 skips it) open streams; the server's RSS before and after, and its CPU
//      over BENCH_IDLE_SECONDS (35, two heartbeats at EVENTS_HEARTBEAT_SECONDS=15) with nothing to send.
//   2. Live: BENCH_STREAMS_LIVE (1000) streams while BENCH_RATE (100) plants a second are created for
//      BENCH_SECONDS (60): every stream must get every event once, in the server's order (its feed pages, read
//      afterwards); the latency from the POST's 200 to the event's arrival on each stream, p50 and p99; the CPU
//      of the server and of this process, so the table says which side was saturated; and the events a socket
//      read carried (more than one: the server wrote them together, or this process read late).
// Env: BENCH_ENV (the service's settings, "KEY=value ..."), BENCH_ROOT (another built checkout), BENCH_OUT
// (results file prefix; default results/streams; `npm run bench` runs it as a stage and puts its rows in
// results.md), BENCH_MACHINE (the machine's name in the results; default the host name).
import http from 'node:http';
import net from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cpus, hostname, loadavg, release } from 'node:os';
import { BENCH_DIR, KINDS, ROOT, cpuMs, freePort, rssMb, settings } from './lib/servers.mjs';
import { streamSection } from './lib/report.mjs';

const env = process.env;
const kindNames = (env.BENCH_STREAM_KINDS ?? 'floor-stream,plant-store').split(',').map((s) => s.trim()).filter(Boolean);
const idleStreams = Number(env.BENCH_STREAMS_IDLE ?? 10_000);
const idleSeconds = Number(env.BENCH_IDLE_SECONDS ?? 35);
const liveStreams = Number(env.BENCH_STREAMS_LIVE ?? 1_000);
const rate = Number(env.BENCH_RATE ?? 100);
const seconds = Number(env.BENCH_SECONDS ?? 60);
const log = (...a) => console.error(new Date().toISOString().slice(11, 19), ...a);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
for (const name of kindNames) {
  if (!KINDS.some((k) => k.name === name)) throw new Error(`BENCH_STREAM_KINDS: no server ${name}; one of ${KINDS.map((k) => k.name).join(', ')}`);
}

/** A stream on a raw socket: the ids of the plants whose events arrived, with their arrival times. */
function openStream(server) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(server.port, '127.0.0.1');
    const stream = { socket, open: false, ids: [], at: [], tail: '', reads: 0 };
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
      const before = stream.ids.length;
      for (const m of text.slice(0, last + 1).matchAll(/^data: \{"id":(\d+),/gm)) {
        stream.ids.push(Number(m[1]));
        stream.at.push(now);
      }
      if (stream.ids.length > before) stream.reads++;
      stream.tail = text.slice(last + 1);
    });
    socket.write(`GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${server.token}\r\nAccept: text/event-stream\r\n\r\n`);
  });
}

async function openMany(server, n) {
  const streams = [];
  for (let i = 0; i < n; i += 200) streams.push(...(await Promise.all(Array.from({ length: Math.min(200, n - i) }, () => openStream(server)))));
  return streams;
}

function create(server, agent, id) {
  return new Promise((resolve, reject) => {
    const body = `{"id":${id},"name":"streamed ${id}"}`;
    const req = http.request({ agent, host: '127.0.0.1', port: server.port, path: '/plants', method: 'POST', headers: { authorization: `Bearer ${server.token}`, 'content-type': 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve(performance.now()) : reject(new Error(`POST ${res.statusCode}`))));
    });
    // A kept-alive socket the server closed as idle just as it was reused: send again (a replay of the same
    // plant is answered 200 without a second event, so a POST that did arrive is not counted twice).
    req.on('error', (err) => (req.reusedSocket && err.code === 'ECONNRESET' ? create(server, agent, id).then(resolve, reject) : reject(err)));
    req.end(body);
  });
}

/** The plant ids of the feed's events, in its order, read page by page. */
async function feedOrder(server, n) {
  const ids = [];
  let after = '';
  while (ids.length < n) {
    const res = await fetch(`http://127.0.0.1:${server.port}/events?limit=1000${after}`, { headers: { authorization: `Bearer ${server.token}` } });
    const page = await res.text();
    const found = [...page.matchAll(/"id":"(msg_[^"]+)"[^{]*"data":\{"id":(\d+),/g)];
    if (found.length === 0) break;
    ids.push(...found.map((m) => Number(m[2])));
    after = `&after=${found.at(-1)[1]}`;
  }
  return ids;
}

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];

/** Both phases against one server; the figures of its row. */
async function measure(name) {
  const port = await freePort();
  const server = {
    port,
    ...(await KINDS.find((k) => k.name === name).start(port, {
      root: env.BENCH_ROOT ?? ROOT,
      env: { LOG_LEVEL: 'warn', EVENTS_MAX_STREAMS: '100000', EVENTS_MAX_STREAMS_PER_TOKEN: '100000', ...settings(env.BENCH_ENV) },
    })),
  };
  // fifo: every socket is used in turn, so none sits idle up to the server's keep-alive timeout (5 s).
  const agent = new http.Agent({ keepAlive: true, maxSockets: 16, scheduling: 'fifo' });
  const row = { name };
  try {
    // 1. Idle streams.
    await sleep(1_000);
    if (idleStreams > 0) {
      const rssBefore = rssMb(server.pid);
      const idle = await openMany(server, idleStreams);
      await sleep(2_000);
      const rssOpen = rssMb(server.pid);
      const cpu0 = cpuMs(server.pid);
      await sleep(idleSeconds * 1000);
      Object.assign(row, { idle: idle.length, rssBefore, rssOpen, kbStream: ((rssOpen - rssBefore) * 1024) / idle.length, cpuIdle: cpuMs(server.pid) - cpu0 });
      log(`${name} idle: ${idle.length} streams, server RSS ${rssBefore.toFixed(0)} -> ${rssOpen.toFixed(0)} MB (${row.kbStream.toFixed(1)} kB a stream); CPU over ${idleSeconds} s: ${row.cpuIdle.toFixed(0)} ms`);
      for (const s of idle) s.socket.destroy();
      await sleep(2_000);
    }

    // 2. Live streams under writes.
    const live = await openMany(server, liveStreams);
    await sleep(1_000);
    const acked = new Map();
    const total = rate * seconds;
    const t0 = performance.now();
    const cpu1 = cpuMs(server.pid);
    const own1 = process.cpuUsage();
    const writes = [];
    for (let i = 0; i < total; i++) {
      const due = t0 + (i * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      const id = i + 1;
      writes.push(create(server, agent, id).then((at) => acked.set(id, at)));
    }
    // The last POST's send: past `seconds` when this process fell behind its timers (it was saturated or starved).
    const sentMs = performance.now() - t0;
    await Promise.all(writes);
    const deadline = performance.now() + 30_000;
    while (live.some((s) => s.ids.length < total) && performance.now() < deadline) await sleep(100);
    // Both CPUs over the same wall time: the writes and the drain after them.
    const wallMs = performance.now() - t0;
    const cpuLive = cpuMs(server.pid) - cpu1;
    const own = process.cpuUsage(own1);
    const latencies = [];
    let complete = 0;
    let reads = 0;
    // plant-store's order is commit order (concurrent POSTs commit in groups), the floor's the order it answered
    // them: every stream must hold every plant once, in the one order the server's pages give afterwards.
    const feed = await feedOrder(server, total);
    for (const s of live) {
      if (s.ids.length === total && s.ids.every((id, i) => id === feed[i])) complete++;
      s.ids.forEach((id, i) => latencies.push(s.at[i] - acked.get(id)));
      reads += s.reads;
      s.socket.destroy();
    }
    latencies.sort((a, b) => a - b);
    Object.assign(row, {
      live: live.length, total, complete, sentS: sentMs / 1000, perRead: latencies.length / reads,
      p50: pct(latencies, 50), p99: pct(latencies, 99), max: latencies.at(-1),
      serverCpu: cpuLive / wallMs * 100, readerCpu: ((own.user + own.system) / 1000 / wallMs) * 100,
    });
    log(
      `${name} live: ${live.length} streams, ${total} plants at ${rate}/s: ${complete} of ${live.length} streams got every event once, in order; ` +
        `POSTs sent over ${row.sentS.toFixed(1)} s; POST 200 -> arrival p50 ${row.p50.toFixed(1)} ms, p99 ${row.p99.toFixed(1)} ms, max ${row.max.toFixed(1)} ms; ` +
        `${row.perRead.toFixed(2)} events a read; server CPU ${row.serverCpu.toFixed(0)}% of a core, readers' process ${row.readerCpu.toFixed(0)}%`,
    );
    return row;
  } finally {
    agent.destroy();
    await server.stop();
  }
}

const loadBefore = loadavg()[0];
const rows = [];
for (const name of kindNames) rows.push(await measure(name));

const f = (v, d = 1) => (Number.isFinite(v) ? v.toFixed(d) : '–');
const result = {
  when: new Date().toISOString(),
  machine: { name: env.BENCH_MACHINE ?? hostname(), cpu: cpus()[0]?.model, cores: cpus().length, kernel: release(), node: process.version },
  settings: { liveStreams, rate, seconds, idleStreams, idleSeconds, env: env.BENCH_ENV ?? '' },
  loadBefore, loadAfter: loadavg()[0], rows,
};
const prefix = env.BENCH_OUT ?? join(BENCH_DIR, 'results', 'streams');
writeFileSync(`${prefix}.json`, JSON.stringify(result, null, 1) + '\n');
writeFileSync(`${prefix}.md`, streamSection(result, '#').join('\n'));
const lines = [
  `${liveStreams} streams, ${rate} plants/s for ${seconds} s; ${idleStreams > 0 ? `${idleStreams} idle streams for ${idleSeconds} s` : 'no idle phase'}; load average ${loadBefore.toFixed(2)} before, ${loadavg()[0].toFixed(2)} after`,
  '',
  '| server | idle: server RSS (a stream) | idle: server CPU | streams complete, in order | POSTs sent over | POST 200 → arrival p50 / p99 / max | events a read | server CPU | readers\' process CPU |',
  '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ...rows.map((r) =>
    `| ${r.name} | ${r.idle ? `${f(r.rssBefore, 0)} → ${f(r.rssOpen, 0)} MB (${f(r.kbStream)} kB)` : '–'} | ${r.idle ? `${f(r.cpuIdle, 0)} ms` : '–'} | ` +
      `${r.complete} of ${r.live} | ${f(r.sentS)} s | ${f(r.p50)} / ${f(r.p99)} / ${f(r.max)} ms | ${f(r.perRead, 2)} | ${f(r.serverCpu, 0)}% | ${f(r.readerCpu, 0)}% |`),
];
console.log(lines.join('\n'));
