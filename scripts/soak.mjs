#!/usr/bin/env node
// Soak test, run by hand (npm run build first): starts `plant-store serve` on a fresh SQLite file, measures
// capacity with a short closed-loop ramp unless --rate is given, then sends a constant-rate (open model)
// mix of creates and reads at 70% of it, so a stall shows up as latency rather than as a slower client.
// Latency counts from each request's scheduled time. Every interval it prints count, errors, p50/p99/max
// and the server's RSS; at the end it stops the server and checks every acknowledged create is in the file.
//
//   node scripts/soak.mjs                       10 minutes at 70% of measured capacity
//   node scripts/soak.mjs --short               30 s, 10 s intervals
//   node scripts/soak.mjs --duration 120 --rate 800 --write-ratio 0.3 --interval 30 --json
//
// Exit code 0 only with zero errors and nothing missing. The server runs with RATE_LIMIT=false (one token
// sends everything) and otherwise default settings.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';

const { values: opts } = parseArgs({
  options: {
    short: { type: 'boolean', default: false },
    duration: { type: 'string' },
    rate: { type: 'string' },
    'write-ratio': { type: 'string', default: '0.5' },
    interval: { type: 'string' },
    'ramp-seconds': { type: 'string', default: '5' },
    'max-in-flight': { type: 'string', default: '512' },
    json: { type: 'boolean', default: false },
  },
});
const durationS = Number(opts.duration ?? (opts.short ? 30 : 600));
const intervalS = Number(opts.interval ?? (opts.short ? 10 : 60));
const writeRatio = Number(opts['write-ratio']);
const maxInFlight = Number(opts['max-in-flight']);
const say = (line) => (opts.json ? process.stderr : process.stdout).write(`${line}\n`);

const BIN = fileURLToPath(new URL('../bin/plant-store.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'plant-store-soak-'));
const file = join(dir, 'soak.db');
const env = { ...process.env, DATABASE_URL: `sqlite:${file}`, PORT: '0', BOOTSTRAP_TOKEN: 'false', RATE_LIMIT: 'false', LOG_LEVEL: 'warn' };

// The CLI's token commands use an existing database only: create it first, as an operator would.
execFileSync(process.execPath, [BIN, 'migrate'], { env, stdio: 'ignore' });
const token = execFileSync(process.execPath, [BIN, 'token', 'create', '--scopes', 'plants:read,plants:write', '--name', 'soak'], { env })
  .toString().trim().split('\n').at(-1);
const server = spawn(process.execPath, [BIN, 'serve'], { env: { ...env, LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'inherit'] });
const port = await new Promise((resolve, reject) => {
  let out = '';
  const onData = (d) => {
    out += d.toString();
    const m = /Server listening at http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
    if (m) resolve(Number(m[1]));
  };
  server.stdout.on('data', onData);
  server.once('exit', (code) => reject(new Error(`server exited (${code}) before listening:\n${out}`)));
});
// Request logs at info would cost the server a write per request; they are drained and dropped.
server.stdout.resume();
const rssMb = () => {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${server.pid}/status`, 'utf8'))[1]) / 1024;
  } catch {
    return NaN;
  }
};

// Idle sockets are dropped after 2 s, before the server's KEEP_ALIVE_TIMEOUT_MS (5 s) closes them: otherwise
// a request sent on a socket the server is closing at that moment fails with ECONNRESET (the keep-alive
// race every HTTP client has), which says nothing about the service.
const agent = new http.Agent({ keepAlive: true, maxSockets: 64, timeout: 2_000 });
const headers = { authorization: `Bearer ${token}` };
let nextId = 1;
const acknowledged = [];

/** One request of the mix; resolves with the status, or the socket error's code. */
function send(kind) {
  return new Promise((resolve) => {
    let path = '/plants?limit=20';
    let body;
    let id;
    if (kind === 'write') {
      id = nextId++;
      path = '/plants';
      body = `{"id":${id},"name":"soak ${id}","tag":"t${id % 7}"}`;
    } else if (kind === 'get' && acknowledged.length > 0) {
      path = `/plants/${acknowledged[Math.floor(Math.random() * acknowledged.length)]}`;
    }
    const req = http.request(
      { host: '127.0.0.1', port, path, method: body ? 'POST' : 'GET', agent,
        headers: body ? { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } : headers },
      (res) => {
        res.resume();
        res.on('end', () => {
          if (id !== undefined && res.statusCode === 200) acknowledged.push(id);
          resolve(res.statusCode);
        });
        res.on('error', (e) => resolve(e.code ?? e.message));
      },
    );
    req.on('error', (e) => resolve(e.code ?? e.message));
    req.end(body);
  });
}
const pick = () => (Math.random() < writeRatio ? 'write' : Math.random() < 0.5 ? 'get' : 'list');

async function measureCapacity(seconds) {
  let done = 0;
  const until = Date.now() + seconds * 1000;
  await Promise.all(Array.from({ length: 32 }, async () => {
    while (Date.now() < until) {
      await send(pick());
      done++;
    }
  }));
  return done / seconds;
}

let rate = Number(opts.rate ?? 0);
let capacity;
if (!rate) {
  capacity = await measureCapacity(Number(opts['ramp-seconds']));
  rate = Math.max(1, Math.round(capacity * 0.7));
  say(`capacity (32 closed-loop clients, ${opts['ramp-seconds']} s): ${capacity.toFixed(0)} req/s; soaking at 70%: ${rate} req/s`);
}
say(`soak: ${durationS} s at ${rate} req/s, ${Math.round(writeRatio * 100)}% creates, report every ${intervalS} s; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);

const intervals = [];
let current = { latencies: [], errors: 0, statuses: {}, late: 0 };
let inFlight = 0;
let issued = 0;
let totalErrors = 0;
const pending = new Set();
const started = performance.now();

function record(latency, status) {
  current.latencies.push(latency);
  if (status !== 200) {
    current.errors++;
    totalErrors++;
    current.statuses[status] = (current.statuses[status] ?? 0) + 1;
  }
}

function closeInterval(index) {
  const l = current.latencies.sort((a, b) => a - b);
  const q = (p) => (l.length ? l[Math.min(l.length - 1, Math.floor(p * l.length))] : NaN);
  const row = { minute: index + 1, requests: l.length, errors: current.errors, statuses: current.statuses, late: current.late,
    p50: +q(0.5).toFixed(2), p99: +q(0.99).toFixed(2), max: +(l.at(-1) ?? NaN).toFixed(2), rssMb: +rssMb().toFixed(1), load1: +loadavg()[0].toFixed(2) };
  intervals.push(row);
  const kinds = Object.entries(row.statuses).map(([k, n]) => `${n} x ${k}`).join(', ');
  say(`[${String((index + 1) * intervalS).padStart(4)} s] ${row.requests} req, ${row.errors} errors${kinds ? ` (${kinds})` : ''}${row.late ? `, ${row.late} not sent (client at max in flight)` : ''}, ` +
    `p50 ${row.p50} ms, p99 ${row.p99} ms, max ${row.max} ms, server RSS ${row.rssMb} MiB, load ${row.load1}`);
  current = { latencies: [], errors: 0, statuses: {}, late: 0 };
}

await new Promise((resolve) => {
  let index = 0;
  const tick = setInterval(() => {
    const now = performance.now();
    const elapsedS = (now - started) / 1000;
    if (elapsedS >= (index + 1) * intervalS) closeInterval(index++);
    if (elapsedS >= durationS) {
      clearInterval(tick);
      resolve();
      return;
    }
    // Open model: every request has a scheduled time; latency counts from it, not from when it went out.
    const due = Math.floor(elapsedS * rate);
    while (issued < due) {
      const scheduled = started + (issued / rate) * 1000;
      issued++;
      if (inFlight >= maxInFlight) {
        current.late++;
        current.errors++;
        totalErrors++;
        continue;
      }
      inFlight++;
      const p = send(pick()).then((status) => {
        inFlight--;
        record(performance.now() - scheduled, status);
        pending.delete(p);
      });
      pending.add(p);
    }
  }, 5);
});
await Promise.all(pending);
agent.destroy();

server.kill('SIGTERM');
const exitCode = await new Promise((r) => server.once('exit', (code, signal) => r(code ?? signal)));
const db = new Database(file, { readonly: true });
const stored = new Set(db.prepare('SELECT id FROM plants').pluck().all());
const integrity = db.pragma('integrity_check', { simple: true });
db.close();
const missing = acknowledged.filter((id) => !stored.has(id));
rmSync(dir, { recursive: true, force: true });

const p99s = intervals.map((i) => i.p99);
const rss = intervals.map((i) => i.rssMb);
const summary = {
  durationS, rate, capacity: capacity && Math.round(capacity), writeRatio, requests: issued, errors: totalErrors,
  acknowledgedWrites: acknowledged.length, missing: missing.length, integrity, serverExit: exitCode,
  p99Range: [Math.min(...p99s), Math.max(...p99s)], rssRangeMb: [Math.min(...rss), Math.max(...rss)],
  loadAverage: loadavg().map((l) => +l.toFixed(2)), intervals,
};
say(`done: ${issued} requests, ${totalErrors} errors, ${acknowledged.length} acknowledged creates, ${missing.length} missing, ` +
  `integrity ${integrity}, server exit ${exitCode}; p99 per interval ${summary.p99Range.join('–')} ms, RSS ${summary.rssRangeMb.join('–')} MiB`);
if (opts.json) process.stdout.write(`${JSON.stringify(summary)}\n`);
process.exit(totalErrors === 0 && missing.length === 0 && integrity === 'ok' && exitCode === 0 ? 0 : 1);
