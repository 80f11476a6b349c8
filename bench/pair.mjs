// npm run pair: two builds or settings of plant-store side by side, to tell a change of a few percent from this
// machine's drift. Both servers share core 0, each driven by its own wrk on core 1, at the same time: whatever
// slows the machine slows both, and the ratio of their CPU time per request (all threads, from /proc) is the
// figure. Run one after the other, the same build varies by ±30% here; side by side, an A/A run stays within
// about ±5% per repetition and its median of 5 within 2%. Report the median ratio of several repetitions.
//
// Env: PAIR_A, PAIR_B (checkouts to run, built; default this repository for both), PAIR_A_ENV, PAIR_B_ENV (the
// service's settings for each, "KEY=value KEY=value", e.g. PAIR_B_ENV="LOG_LEVEL=warn"), PAIR_A_KIND,
// PAIR_B_KIND (another server of lib/servers.mjs in place of plant-store, e.g. fastify), PAIR_A_NODE, PAIR_B_NODE
// (the Node.js executable for each plant-store; default the one running this script), PAIR_ENDPOINT (post,
// get or list; get), PAIR_CONNS (100), PAIR_SECONDS (6), PAIR_REPS (5), PAIR_A_SUBSCRIPTIONS, PAIR_B_SUBSCRIPTIONS
// (webhook subscriptions to every event made on that side before the run, each to its own URL on a receiver
// that accepts and never answers, so their deliveries are made and stay pending; the side also needs
// PAIR_X_ENV="WEBHOOK_ALLOWED_HOSTS=127.0.0.1 WEBHOOK_MAX_SUBSCRIPTIONS=1000 WEBHOOK_TIMEOUT_MS=600000"). A checkout of another commit for
// PAIR_A: git worktree add /tmp/base REV && ln -s "$PWD/node_modules" /tmp/base/ && (cd /tmp/base && npm run build).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { KINDS, ROOT, SEEDED, SEED_BASE, freePort, seed } from './lib/servers.mjs';
import { runWrk } from './lib/wrk.mjs';

const env = process.env;
const endpoint = env.PAIR_ENDPOINT ?? 'get';
const conns = Number(env.PAIR_CONNS ?? 100);
const seconds = Number(env.PAIR_SECONDS ?? 6);
const reps = Number(env.PAIR_REPS ?? 5);
const CONNECT_PAUSE_MS = 300;
if (!['post', 'get', 'list'].includes(endpoint)) throw new Error(`PAIR_ENDPOINT: post, get or list, not ${endpoint}`);

const settings = (spec = '') =>
  Object.fromEntries(spec.split(/\s+/).filter(Boolean).map((kv) => {
    const i = kv.indexOf('=');
    if (i < 1) throw new Error(`expected KEY=value, got ${kv}`);
    return [kv.slice(0, i), kv.slice(i + 1)];
  }));
const kindNamed = (name = 'plant-store') => {
  const kind = KINDS.find((k) => k.name === name);
  if (!kind) throw new Error(`no server ${name}; one of ${KINDS.map((k) => k.name).join(', ')}`);
  return kind;
};
const sides = [
  { name: 'A', kind: kindNamed(env.PAIR_A_KIND), root: env.PAIR_A ?? ROOT, env: settings(env.PAIR_A_ENV), node: env.PAIR_A_NODE, subscriptions: Number(env.PAIR_A_SUBSCRIPTIONS ?? 0) },
  { name: 'B', kind: kindNamed(env.PAIR_B_KIND), root: env.PAIR_B ?? ROOT, env: settings(env.PAIR_B_ENV), node: env.PAIR_B_NODE, subscriptions: Number(env.PAIR_B_SUBSCRIPTIONS ?? 0) },
];

/** A receiver that accepts connections and never answers: every delivery to it stays in flight, then pending. */
async function silentReceiver() {
  const sockets = new Set();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: server.address().port, close: () => { for (const s of sockets) s.destroy(); server.close(); } };
}

/** `count` subscriptions to every event on one plant-store side, made through the API with a webhooks:manage token. */
async function subscribe(side, count, receiverPort) {
  const cli = join(side.root, 'bin/plant-store.js');
  const out = execFileSync(side.node ?? process.execPath, [cli, 'token', 'create', '--scopes', 'webhooks:manage', '--name', 'bench-webhooks'], {
    env: { ...process.env, DATABASE_URL: `sqlite:${side.server.db}` }, encoding: 'utf8',
  });
  const token = out.trim().split('\n').pop().trim();
  for (let i = 0; i < count; i += 50) {
    await Promise.all(Array.from({ length: Math.min(50, count - i) }, async (_, k) => {
      const res = await fetch(`http://127.0.0.1:${side.port}/webhooks`, {
        method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url: `http://127.0.0.1:${receiverPort}/hook/${i + k}` }),
      });
      if (res.status !== 201) throw new Error(`POST /webhooks: ${res.status} ${await res.text()}`);
    }));
  }
}

/** CPU time of every thread of the process so far, in ms. */
function cpuMs(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * (1000 / 100);
}

// A salt range of its own, so that ids never repeat those of a bench run started in the same minute.
let salt = 1 + (Math.floor(Date.now() / 60_000) % 8000) * 1000 + 500;
const wrk = (side, secs) => runWrk({
  script: endpoint, port: side.port, conns, seconds: secs, salt: salt++, connectPauseMs: CONNECT_PAUSE_MS,
  env: { BENCH_TOKEN: side.server.token, BENCH_SEEDED: String(SEEDED), BENCH_SEED_BASE: String(SEED_BASE) },
});

const receiver = sides.some((s) => s.subscriptions > 0) ? await silentReceiver() : undefined;
try {
  for (const side of sides) {
    side.port = await freePort();
    side.server = await side.kind.start(side.port, { root: side.root, env: side.env, node: side.node });
    if (side.subscriptions > 0) await subscribe(side, side.subscriptions, receiver.port);
    await seed(side.port, side.server.token);
  }
  await Promise.all(sides.map((s) => wrk(s, 2)));
  const ratios = [];
  for (let rep = 1; rep <= reps; rep++) {
    const before = sides.map((s) => cpuMs(s.server.pid));
    const runs = await Promise.all(sides.map((s) => wrk(s, seconds)));
    const us = sides.map((s, i) => (1000 * (cpuMs(s.server.pid) - before[i])) / runs[i].requests);
    const bad = runs.map((r) => Object.entries(r.statuses).filter(([k]) => k !== '200').map(([k, v]) => `${k}×${v}`).join(' '));
    ratios.push(us[1] / us[0]);
    const ms = (us) => (us / 1000).toFixed(2);
    console.log(`${endpoint} c=${conns} rep ${rep}: A ${us[0].toFixed(1)} µs/req (${runs[0].requests} req, p50 ${ms(runs[0].p50_us)} p99 ${ms(runs[0].p99_us)} ms${bad[0] ? `, ${bad[0]}` : ''})  ` +
      `B ${us[1].toFixed(1)} µs/req (${runs[1].requests} req, p50 ${ms(runs[1].p50_us)} p99 ${ms(runs[1].p99_us)} ms${bad[1] ? `, ${bad[1]}` : ''})  B/A ${(us[1] / us[0]).toFixed(3)}`);
  }
  ratios.sort((x, y) => x - y);
  console.log(`median B/A CPU per request: ${ratios[Math.floor(ratios.length / 2)].toFixed(3)} (range ${ratios[0].toFixed(3)}-${ratios.at(-1).toFixed(3)})`);
} finally {
  await Promise.all(sides.map((s) => s.server?.stop()));
  receiver?.close();
}
