// npm run memory: what plant-store holds in memory, per process, read from /proc.
//  (a) idle, one process (WORKERS=1): RSS and PSS (/proc/<pid>/smaps_rollup: each shared page divided among
//      the processes that map it) a few seconds after it first answers /healthz;
//  (b) idle, WORKERS=2 and 3: the PSS of the primary and of each worker, and what one more worker adds (the
//      sum of every process's PSS at 3 less that at 2);
//  (c) the bench's sequence on one process: every plant-store cell of a round of `npm run bench` (POST, GET by
//      id, then the list, each at c=1, 10, 100 and 256, warm-up then the measured run, as run.mjs runs them),
//      on a fresh seeded store, with the process's peak RSS (VmHWM) read after each cell.
// Server on core 0, wrk on core 1, as in run.mjs. MEMORY_A (another built checkout, e.g. main) runs alternating
// with this one (or MEMORY_B), so both see the same machine.
//
// Env: MEMORY_A, MEMORY_B, MEMORY_A_NODE_ARGS and MEMORY_B_NODE_ARGS (Node flags for that side, after npm start's
// own), MEMORY_A_ENV and MEMORY_B_ENV (the environment for that side, "KEY=value ..."), MEMORY_REPS (idle repetitions, 3), MEMORY_SEQUENCE (0 skips (c)), MEMORY_SETTLE_MS
// (5000: the wait before an idle reading), BENCH_SECONDS (4), BENCH_WARMUP (2), BENCH_CONNS (1,10,100,256),
// MEMORY_OUT (results file prefix; default results/memory).
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus, hostname, loadavg, release } from 'node:os';
import { join } from 'node:path';
import { BENCH_DIR, KINDS, SEEDED, SEED_BASE, builtSides, childPids, freePort, seed } from './lib/servers.mjs';
import { runWrk } from './lib/wrk.mjs';

const env = process.env;
const reps = Number(env.MEMORY_REPS ?? 3);
const settleMs = Number(env.MEMORY_SETTLE_MS ?? 5_000);
const sequence = env.MEMORY_SEQUENCE !== '0';
const seconds = Number(env.BENCH_SECONDS ?? 4);
const warmup = Number(env.BENCH_WARMUP ?? 2);
const conns = (env.BENCH_CONNS ?? '1,10,100,256').split(',').map(Number);
const CONNECT_PAUSE_MS = 300;
const plantStore = KINDS.find((k) => k.name === 'plant-store');
const log = (...a) => console.error(new Date().toISOString().slice(11, 19), ...a);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const sides = builtSides('MEMORY');
for (const side of sides) {
  const named = side.name === 'A' ? 'A' : 'B';
  side.nodeArgs = (env[`MEMORY_${named}_NODE_ARGS`] ?? '').split(/\s+/).filter(Boolean);
  side.env = Object.fromEntries((env[`MEMORY_${named}_ENV`] ?? '').split(/\s+/).filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
  side.idle = [];
  side.workers = { 2: [], 3: [] };
  side.sequence = [];
}

const kb = (text, field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN);
/** RSS, PSS (with its anonymous and file-backed parts) and peak RSS of one process, in MB. */
function memoryOf(pid) {
  const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const mb = (v) => Math.round(v / 102.4) / 10;
  return {
    rss: mb(kb(status, 'VmRSS')), hwm: mb(kb(status, 'VmHWM')),
    pss: mb(kb(rollup, 'Pss')), pssAnon: mb(kb(rollup, 'Pss_Anon')), pssFile: mb(kb(rollup, 'Pss_File')),
  };
}

const start = (side, workers) => freePort().then(async (port) => ({ ...(await plantStore.start(port, { root: side.root, nodeArgs: side.nodeArgs, env: { ...side.env, WORKERS: String(workers) } })), port }));

async function idle(side) {
  const server = await start(side, 1);
  try {
    await sleep(settleMs);
    return memoryOf(server.pid);
  } finally {
    await server.stop();
  }
}

async function idleWorkers(side, count) {
  const server = await start(side, count);
  try {
    for (let i = 0; i < 200 && childPids(server.pid).length < count; i++) await sleep(50);
    // Every worker listening and idle: a worker's start takes about 0.3 s of CPU here.
    await sleep(settleMs + 1_000);
    const primary = memoryOf(server.pid);
    const workers = childPids(server.pid).map(memoryOf);
    if (workers.length !== count) throw new Error(`${workers.length} workers, expected ${count}`);
    return { primary, workers, pss: Math.round(10 * (primary.pss + workers.reduce((a, w) => a + w.pss, 0))) / 10 };
  } finally {
    await server.stop();
  }
}

let salt = 1 + (Math.floor(Date.now() / 60_000) % 8000) * 1000 + 700;
async function benchSequence(side) {
  const server = await start(side, 1);
  try {
    await seed(server.port, server.token);
    const cells = [{ cell: 'seeded', ...memoryOf(server.pid) }];
    const wenv = { BENCH_TOKEN: server.token, BENCH_SEEDED: String(SEEDED), BENCH_SEED_BASE: String(SEED_BASE) };
    for (const endpoint of ['post', 'get', 'list']) {
      for (const c of conns) {
        const run = (s) => runWrk({ script: endpoint, port: server.port, conns: c, seconds: s, salt: salt++, connectPauseMs: CONNECT_PAUSE_MS, env: wenv });
        await run(warmup);
        const r = await run(seconds);
        const m = { cell: `${endpoint} c=${c}`, rps: Math.round(r.requests / r.busy_s), ...memoryOf(server.pid) };
        cells.push(m);
        log(`${side.name} (${side.commit}) ${m.cell.padEnd(12)} ${String(m.rps).padStart(6)} req/s  RSS ${m.rss} MB  peak ${m.hwm} MB  PSS ${m.pss} MB`);
      }
    }
    return cells;
  } finally {
    await server.stop();
  }
}

for (let rep = 1; rep <= reps; rep++) {
  const order = rep % 2 === 1 ? sides : [...sides].reverse();
  for (const side of order) {
    const one = await idle(side);
    side.idle.push(one);
    const w2 = await idleWorkers(side, 2);
    const w3 = await idleWorkers(side, 3);
    side.workers[2].push(w2);
    side.workers[3].push(w3);
    log(`${side.name} (${side.commit}) rep ${rep}: idle RSS ${one.rss} PSS ${one.pss} MB; WORKERS=2 PSS ${w2.pss} (workers ${w2.workers.map((w) => w.pss).join(', ')}); WORKERS=3 PSS ${w3.pss} (workers ${w3.workers.map((w) => w.pss).join(', ')}); added worker ${(w3.pss - w2.pss).toFixed(1)} MB`);
  }
}
if (sequence) {
  for (const side of sides) side.sequence = await benchSequence(side);
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const cell = (xs) => `${median(xs).toFixed(1)} (${Math.min(...xs).toFixed(1)}–${Math.max(...xs).toFixed(1)})`;
const rows = [
  ['one process, idle: RSS', (s) => s.idle.map((m) => m.rss)],
  ['one process, idle: PSS', (s) => s.idle.map((m) => m.pss)],
  ['WORKERS=2, idle: PSS of all processes', (s) => s.workers[2].map((w) => w.pss)],
  ['WORKERS=2, idle: PSS of the primary', (s) => s.workers[2].map((w) => w.primary.pss)],
  ['WORKERS=2, idle: PSS of a worker', (s) => s.workers[2].flatMap((w) => w.workers.map((x) => x.pss))],
  ['WORKERS=2, idle: RSS of a worker', (s) => s.workers[2].flatMap((w) => w.workers.map((x) => x.rss))],
  ['WORKERS=3, idle: PSS of all processes', (s) => s.workers[3].map((w) => w.pss)],
  ['WORKERS=3, idle: PSS of a worker', (s) => s.workers[3].flatMap((w) => w.workers.map((x) => x.pss))],
  ['one worker more (PSS at 3 less at 2, same repetition)', (s) => s.workers[3].map((w, i) => w.pss - s.workers[2][i].pss)],
];
const machine = { host: hostname(), cpu: cpus()[0]?.model, cores: cpus().length, kernel: release(), node: process.version, load1: loadavg()[0] };
const label = (s) => `${s.name === 'this' ? '' : `${s.name}: `}${s.commit}${[...Object.entries(s.env).map(([k, v]) => ` ${k}=${v}`), ...s.nodeArgs.map((a) => ` ${a}`)].join('')}`;
const md = [
  '# plant-store memory', '',
  `${new Date().toISOString()} on ${machine.host}: ${machine.cpu}, ${machine.cores} cores, kernel ${machine.kernel}, Node ${machine.node}; load average at the end ${machine.load1.toFixed(1)}.`,
  `\`npm --prefix bench run memory\`, ${reps} repetitions per side, sides alternating; idle readings ${settleMs} ms after start (workers: ${settleMs + 1000} ms after the last fork). MB, medians (range). SQLite file, started as \`npm start\` starts it.`, '',
  `| | ${sides.map(label).join(' | ')} |`,
  `|---|${sides.map(() => '---:').join('|')}|`,
  ...rows.map(([text, get]) => `| ${text} | ${sides.map((s) => cell(get(s))).join(' | ')} |`),
  '',
];
if (sequence) {
  md.push(`The bench's sequence on one process (every plant-store cell of a round, ${warmup} s warm-up + ${seconds} s each, in run.mjs's order): RSS after each cell / peak RSS (VmHWM) so far, MB.`, '');
  md.push(`| cell | ${sides.map(label).join(' | ')} |`, `|---|${sides.map(() => '---:').join('|')}|`);
  for (let i = 0; i < sides[0].sequence.length; i++) {
    md.push(`| ${sides[0].sequence[i].cell} | ${sides.map((s) => `${s.sequence[i].rss} / ${s.sequence[i].hwm}`).join(' | ')} |`);
  }
  md.push('');
}
const prefix = env.MEMORY_OUT ?? join(BENCH_DIR, 'results', 'memory');
writeFileSync(`${prefix}.md`, md.join('\n'));
writeFileSync(`${prefix}.json`, JSON.stringify({ machine, reps, settleMs, sides }, null, 2) + '\n');
console.log(md.join('\n'));
