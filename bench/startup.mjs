// npm run startup: how long plant-store takes to start serving, and how much CPU that costs.
//  (a) `serve` from cold, one process (WORKERS=1): spawned as `npm start` runs it, on an existing SQLite file;
//      the wall time until GET /healthz first answers 200, and the process's CPU time (utime + stime of every
//      thread, /proc/<pid>/stat) at that moment.
//  (b) a worker (WORKERS=2): the CPU time each worker used from its fork until its HTTP server listened (from
//      inside the worker, by lib/worker-ready.mjs loaded with --import: it changes nothing in the service), both
//      for the two workers of a start and for the replacement the primary forks when one is killed (a quiet
//      server, as after a crash or a rolling restart).
// Each side runs its repetitions alternating with the other's, so a drift of the machine hits both: STARTUP_A (a
// built checkout, e.g. main's: git worktree add --detach /tmp/base main && ln -s "$PWD/node_modules" /tmp/base/
// && (cd /tmp/base && npm run build)) and STARTUP_B (default this repository). Without STARTUP_A only this
// repository is measured.
//
// Env: STARTUP_A, STARTUP_B, STARTUP_REPS (5), STARTUP_NODE_ARGS (Node flags for the server, e.g. --cpu-prof
// --cpu-prof-dir=/tmp/prof: workers inherit them), STARTUP_OUT (results file prefix; default results/startup).
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { cpus, hostname, loadavg, release, tmpdir } from 'node:os';
import { join } from 'node:path';
import { BENCH_DIR, builtSides, childPids, cpuMs, freePort } from './lib/servers.mjs';

const env = process.env;
const reps = Number(env.STARTUP_REPS ?? 5);
const nodeArgs = (env.STARTUP_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
const READY_HOOK = join(BENCH_DIR, 'lib/worker-ready.mjs');
const TIMEOUT_MS = 60_000;
const log = (...a) => console.error(new Date().toISOString().slice(11, 19), ...a);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const sides = builtSides('STARTUP');
for (const side of sides) {
  side.dir = mkdtempSync(join(tmpdir(), 'bench-startup-'));
  side.databaseUrl = `sqlite:${join(side.dir, 'plant-store.db')}`;
  // Migrated once: every start below opens an existing store, as a restart does.
  execFileSync(process.execPath, [join(side.root, 'bin/plant-store.js'), 'migrate'], { env: { ...env, DATABASE_URL: side.databaseUrl }, stdio: 'ignore' });
  side.cold = [];
  side.workers = [];
  side.replacements = [];
}

const healthy = (port) =>
  new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/healthz', agent: false, timeout: 1_000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
    req.end();
  });

function startServer(side, port, workers, readyFile) {
  const child = spawn(process.execPath, ['--max-semi-space-size=16', ...nodeArgs, join(side.root, 'bin/plant-store.js'), 'serve'], {
    cwd: side.dir,
    env: {
      ...env, DATABASE_URL: side.databaseUrl, PORT: String(port), HOST: '127.0.0.1', WORKERS: String(workers), BOOTSTRAP_TOKEN: 'false',
      ...(readyFile && { STARTUP_READY_FILE: readyFile, NODE_OPTIONS: `${env.NODE_OPTIONS ?? ''} --import=${READY_HOOK}`.trim() }),
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise((r) => child.once('exit', r));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    const t = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(t);
  };
  return { child, stop };
}

/** (a): spawn to the first 200 from /healthz, polled as fast as the server refuses connections. */
async function coldStart(side) {
  const port = await freePort();
  const started = process.hrtime.bigint();
  const { child, stop } = startServer(side, port, 1);
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${side.root}: serve exited with ${child.exitCode}`);
      if (await healthy(port)) break;
      if (Number(process.hrtime.bigint() - started) / 1e6 > TIMEOUT_MS) throw new Error('serve did not answer /healthz');
      await sleep(2);
    }
    const wallMs = Number(process.hrtime.bigint() - started) / 1e6;
    return { wallMs, cpuMs: cpuMs(child.pid) };
  } finally {
    await stop();
  }
}

const readyLines = (file) => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l)) : []);

async function until(what, condition) {
  const deadline = Date.now() + TIMEOUT_MS;
  for (;;) {
    const value = condition();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

/** (b): two workers' start, then the replacement of one killed. */
async function workerStart(side) {
  const port = await freePort();
  const readyFile = join(side.dir, `ready-${Date.now()}.jsonl`);
  const { child, stop } = startServer(side, port, 2, readyFile);
  try {
    const first = await until('two workers listening', () => (readyLines(readyFile).length >= 2 ? readyLines(readyFile) : undefined));
    await until('/healthz', () => healthy(port));
    const victim = first[0].pid;
    process.kill(victim, 'SIGKILL');
    const replaced = await until('a replacement listening', () => readyLines(readyFile).find((l) => !first.some((f) => f.pid === l.pid)));
    // The outside view of the same moment (a few ms later, while the worker idles): /proc's clock-tick count.
    const procMs = cpuMs(replaced.pid);
    if (!childPids(child.pid).includes(replaced.pid)) throw new Error('the replacement is not a worker of this server');
    return { first, replaced: { ...replaced, procCpuMs: procMs } };
  } finally {
    await stop();
  }
}

for (let rep = 1; rep <= reps; rep++) {
  // Alternate which side goes first.
  const order = rep % 2 === 1 ? sides : [...sides].reverse();
  for (const side of order) {
    const cold = await coldStart(side);
    side.cold.push(cold);
    const w = await workerStart(side);
    side.workers.push(...w.first);
    side.replacements.push(w.replaced);
    log(`${side.name} (${side.commit}) rep ${rep}: serve ${cold.wallMs.toFixed(0)} ms wall, ${cold.cpuMs.toFixed(0)} ms CPU; workers ${w.first.map((f) => f.cpuMs.toFixed(0)).join(', ')} ms CPU; replacement ${w.replaced.cpuMs.toFixed(0)} ms CPU (${w.replaced.wallMs.toFixed(0)} ms wall)`);
  }
}
for (const side of sides) rmSync(side.dir, { recursive: true, force: true });

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const cell = (xs) => `${median(xs).toFixed(0)} (${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)})`;
const summary = (side) => ({
  serveWallMs: median(side.cold.map((c) => c.wallMs)),
  serveCpuMs: median(side.cold.map((c) => c.cpuMs)),
  workerCpuMs: median(side.workers.map((w) => w.cpuMs)),
  replacementCpuMs: median(side.replacements.map((w) => w.cpuMs)),
  replacementWallMs: median(side.replacements.map((w) => w.wallMs)),
});
const machine = { host: hostname(), cpu: cpus()[0]?.model, cores: cpus().length, kernel: release(), node: process.version, load1: loadavg()[0] };
const rows = [
  ['`serve` (1 process): spawn to first /healthz 200, wall ms', (s) => s.cold.map((c) => c.wallMs)],
  ['`serve` (1 process): its CPU ms at that moment', (s) => s.cold.map((c) => c.cpuMs)],
  ['worker (WORKERS=2, both starting): CPU ms, fork to listening', (s) => s.workers.map((w) => w.cpuMs)],
  ['replacement worker (one killed): CPU ms, fork to listening', (s) => s.replacements.map((w) => w.cpuMs)],
  ['replacement worker: wall ms, fork to listening', (s) => s.replacements.map((w) => w.wallMs)],
];
const md = [
  '# plant-store start-up', '',
  `${new Date().toISOString()} on ${machine.host}: ${machine.cpu}, ${machine.cores} cores, kernel ${machine.kernel}, Node ${machine.node}; load average at the end ${machine.load1.toFixed(1)}.`,
  `\`npm --prefix bench run startup\`, ${reps} repetitions per side, sides alternating. Medians (range). SQLite file (migrated once), LOG_LEVEL and the rest at their defaults, started as \`npm start\` starts it.`, '',
  `| | ${sides.map((s) => `${s.name === 'this' ? '' : `${s.name}: `}${s.commit}`).join(' | ')} |`,
  `|---|${sides.map(() => '---:').join('|')}|`,
  ...rows.map(([label, get]) => `| ${label} | ${sides.map((s) => cell(get(s))).join(' | ')} |`),
  '',
];
const prefix = env.STARTUP_OUT ?? join(BENCH_DIR, 'results', 'startup');
writeFileSync(`${prefix}.md`, md.join('\n'));
writeFileSync(`${prefix}.json`, JSON.stringify({ machine, reps, sides: sides.map(({ dir, databaseUrl, ...s }) => ({ ...s, summary: summary(s) })) }, null, 2) + '\n');
console.log(md.join('\n'));
