// npm --prefix bench run solo: one server alone on core 0, driven by wrk on core 1, and its CPU time per request
// split into user and system (kernel) time, from /proc. pair.mjs puts two servers on one core to cancel this
// machine's drift; solo says where one server's time goes, in particular how much is the kernel's: the socket
// write of an answer also wakes the client, which costs more the more often the client sleeps between answers,
// so a slower server pays more system time per request for the same syscalls (bench/README, the floor of GET).
//
// Env: SOLO_KIND (plant-store; any server of lib/servers.mjs, e.g. floor), SOLO_ENDPOINT (get; get, list or
// post), SOLO_ENV (the service's settings, "KEY=value ..."), SOLO_NODE_ARGS (Node flags, e.g. --cpu-prof),
// SOLO_CONNS (100), SOLO_SECONDS (8), SOLO_REPS (3), SOLO_ROOT (another built checkout to run). Each line also
// splits the CPU time by thread, grouped by the thread's name (/proc/PID/task/*/comm: the event loop is the
// process's own name, a worker thread's is its isolate's, libuv's pool and V8's helpers have theirs).
import { readdirSync, readFileSync } from 'node:fs';
import { KINDS, SEEDED, SEED_BASE, cpuMs, freePort, seed, settings } from './lib/servers.mjs';
import { runWrk } from './lib/wrk.mjs';

const env = process.env;
const kindName = env.SOLO_KIND ?? 'plant-store';
const kind = KINDS.find((k) => k.name === kindName);
if (!kind) throw new Error(`SOLO_KIND: one of ${KINDS.map((k) => k.name).join(', ')}, not ${kindName}`);
const endpoint = env.SOLO_ENDPOINT ?? 'get';
if (!['get', 'list', 'post'].includes(endpoint)) throw new Error(`SOLO_ENDPOINT: get, list or post, not ${endpoint}`);
if (kind.endpoints && !kind.endpoints.includes(endpoint)) throw new Error(`${kindName} serves ${kind.endpoints.join(', ')} only`);
const conns = Number(env.SOLO_CONNS ?? 100);
const seconds = Number(env.SOLO_SECONDS ?? 8);
const reps = Number(env.SOLO_REPS ?? 3);
const CONNECT_PAUSE_MS = 300;

/** User and system CPU time of the process's threads so far, in ms (a one-process server: no children). */
function userSys(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return [Number(fields[11]) * 10, Number(fields[12]) * 10];
}

/** User and system CPU time so far of each thread of the process, in ms, summed by thread name. */
function byThread(pid) {
  const out = new Map();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      const f = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8').split(') ')[1].split(' ');
      const [u, s] = out.get(name) ?? [0, 0];
      out.set(name, [u + Number(f[11]) * 10, s + Number(f[12]) * 10]);
    } catch {
      // the thread ended meanwhile
    }
  }
  return out;
}

const port = await freePort();
const server = await kind.start(port, { root: env.SOLO_ROOT, env: settings(env.SOLO_ENV), nodeArgs: (env.SOLO_NODE_ARGS ?? '').split(/\s+/).filter(Boolean) });
try {
  if (!server.seeded) await seed(port, server.token);
  let salt = 1 + (Math.floor(Date.now() / 60_000) % 8000) * 1000 + 700;
  const wrk = (secs) => runWrk({
    script: endpoint, port, conns, seconds: secs, salt: salt++, connectPauseMs: CONNECT_PAUSE_MS,
    env: { BENCH_TOKEN: server.token, BENCH_SEEDED: String(SEEDED), BENCH_SEED_BASE: String(SEED_BASE) },
  });
  await wrk(2);
  for (let rep = 1; rep <= reps; rep++) {
    const [u0, s0] = userSys(server.pid);
    const c0 = cpuMs(server.pid);
    const t0 = byThread(server.pid);
    const r = await wrk(seconds);
    const [u1, s1] = userSys(server.pid);
    const t1 = byThread(server.pid);
    const per = (ms) => ((1000 * ms) / r.requests).toFixed(1);
    const threads = [...t1].map(([name, [u, s]]) => [name, u - (t0.get(name)?.[0] ?? 0), s - (t0.get(name)?.[1] ?? 0)]).filter(([, u, s]) => u + s > 0).sort((a, b) => b[1] + b[2] - a[1] - a[2]);
    console.log(`${kindName} ${endpoint} c=${conns} rep ${rep}: ${Math.round(r.requests / r.busy_s)} req/s, ${per(cpuMs(server.pid) - c0)} µs/req (user ${per(u1 - u0)}, system ${per(s1 - s0)}), non-2xx ${r.errors.status}; ` +
      `by thread (user+system): ${threads.map(([name, u, s]) => `${name} ${per(u)}+${per(s)}`).join(', ')}`);
  }
} finally {
  await server.stop();
}
