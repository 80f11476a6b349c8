// npm run pair: two builds or settings of plant-store side by side, to tell a change of a few percent from this
// machine's drift. Both servers share core 0, each driven by its own wrk on core 1, at the same time: whatever
// slows the machine slows both, and the ratio of their CPU time per request (all threads, from /proc) is the
// figure. Run one after the other, the same build varies by ±30% here; side by side, an A/A run stays within
// about ±5% per repetition and its median of 5 within 2%. Report the median ratio of several repetitions.
//
// Env: PAIR_A, PAIR_B (checkouts to run, built; default this repository for both), PAIR_A_ENV, PAIR_B_ENV (the
// service's settings for each, "KEY=value KEY=value", e.g. PAIR_B_ENV="LOG_LEVEL=warn"), PAIR_A_KIND,
// PAIR_B_KIND (another server of lib/servers.mjs in place of plant-store, e.g. fastify, or floor for get and post), PAIR_A_NODE, PAIR_B_NODE
// (the Node.js executable for each plant-store; default the one running this script), PAIR_A_NODE_ARGS,
// PAIR_B_NODE_ARGS (Node flags for each plant-store, after npm start's own, so they win, or for the floor), PAIR_ENDPOINT (post,
// get, list, patch (a merge patch of a seeded plant's name), put, patch-if-match or delete (see
// bench/writes.mjs; what their scripts need is prepared before each measurement, outside it); get), PAIR_CONNS (100), PAIR_SECONDS (6), PAIR_REPS (5), PAIR_A_SUBSCRIPTIONS, PAIR_B_SUBSCRIPTIONS
// (webhook subscriptions to every event made on that side before the run, each to its own URL on a receiver
// that accepts and never answers, so their deliveries are made and stay pending; the side also needs
// PAIR_X_ENV="WEBHOOK_ALLOWED_HOSTS=127.0.0.1 WEBHOOK_MAX_SUBSCRIPTIONS=1000 WEBHOOK_TIMEOUT_MS=600000"). A checkout of another commit for
// PAIR_A: git worktree add /tmp/base REV && ln -s "$PWD/node_modules" /tmp/base/ && (cd /tmp/base && npm run build).
//
// PAIR_A_STORE, PAIR_B_STORE: sqlite (default) or postgres. A postgres side gets a PostgreSQL server of its own
// (lib/pg.mjs, initdb into a temp dir, on 127.0.0.1), pinned to core 1 with the wrks, not to the service's core
// 0: as with a database on another host, the service's core runs only the service. The server's CPU is then in
// none of the service's figures, so each line also gives every side's req/s of the same round and, for a
// postgres side, the database server's CPU per request (db µs/req, all its processes, from /proc). With the
// database competing with the wrks for core 1, req/s can be bounded by core 1 rather than by the service: read
// the service's µs/req (its core's cost per request) as the per-instance figure, and req/s as its check.
import { execFileSync } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { KINDS, ROOT, SEEDED, SEED_BASE, cpuMs, freePort, seed, settings } from './lib/servers.mjs';
import { startPostgres } from './lib/pg.mjs';
import { DeletePool, writeRunEnv } from './lib/cells.mjs';
import { runWrk } from './lib/wrk.mjs';

const env = process.env;
const endpoint = env.PAIR_ENDPOINT ?? 'get';
const conns = Number(env.PAIR_CONNS ?? 100);
const seconds = Number(env.PAIR_SECONDS ?? 6);
const reps = Number(env.PAIR_REPS ?? 5);
const CONNECT_PAUSE_MS = 300;
const ENDPOINTS = ['post', 'get', 'list', 'patch', 'put', 'patch-if-match', 'delete'];
if (!ENDPOINTS.includes(endpoint)) throw new Error(`PAIR_ENDPOINT: ${ENDPOINTS.join(', ')}, not ${endpoint}`);

const kindNamed = (name = 'plant-store') => {
  const kind = KINDS.find((k) => k.name === name);
  if (!kind) throw new Error(`no server ${name}; one of ${KINDS.map((k) => k.name).join(', ')}`);
  return kind;
};
const servedBy = (kind) => {
  if (kind.endpoints && !kind.endpoints.includes(endpoint)) throw new Error(`${kind.name} serves PAIR_ENDPOINT ${kind.endpoints.join(', ')} only, not ${endpoint}`);
  return kind;
};
const storeNamed = (name = 'sqlite') => {
  if (!['sqlite', 'postgres'].includes(name)) throw new Error(`PAIR_X_STORE: sqlite or postgres, not ${name}`);
  return name;
};
const sides = ['A', 'B'].map((name) => ({
  name, kind: servedBy(kindNamed(env[`PAIR_${name}_KIND`])), root: env[`PAIR_${name}`] ?? ROOT, env: settings(env[`PAIR_${name}_ENV`]),
  node: env[`PAIR_${name}_NODE`], nodeArgs: (env[`PAIR_${name}_NODE_ARGS`] ?? '').split(/\s+/).filter(Boolean), subscriptions: Number(env[`PAIR_${name}_SUBSCRIPTIONS`] ?? 0), store: storeNamed(env[`PAIR_${name}_STORE`]),
}));

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

/** `count` subscriptions to every event on one plant-store side, made through the API with a token that may subscribe (webhooks:manage and plants:read). */
async function subscribe(side, count, receiverPort) {
  const cli = join(side.root, 'bin/plant-store.js');
  const out = execFileSync(side.node ?? process.execPath, [cli, 'token', 'create', '--scopes', 'webhooks:manage,plants:read', '--name', 'bench-webhooks'], {
    env: { ...process.env, DATABASE_URL: side.server.databaseUrl }, encoding: 'utf8',
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

// A salt range of its own, so that ids never repeat those of a bench run started in the same minute.
let salt = 1 + (Math.floor(Date.now() / 60_000) % 8000) * 1000 + 500;
/** What the side's script needs for a run of `secs` (ETags, plants to delete), before the run and its measurement. */
const prepare = (side, secs) => writeRunEnv(endpoint, { ...side.server, port: side.port }, conns, secs, side.pool);
const wrk = async (side, secs, extra) => {
  const r = await runWrk({
    script: endpoint, port: side.port, conns, seconds: secs, salt: salt++, connectPauseMs: CONNECT_PAUSE_MS,
    env: { BENCH_TOKEN: side.server.token, BENCH_SEEDED: String(SEEDED), BENCH_SEED_BASE: String(SEED_BASE), ...extra },
  });
  side.pool?.used(r, conns);
  return r;
};
const prepared = async (secs) => {
  const extras = [];
  for (const side of sides) extras.push(await prepare(side, secs));
  return extras;
};

const receiver = sides.some((s) => s.subscriptions > 0) ? await silentReceiver() : undefined;
try {
  for (const side of sides) {
    side.port = await freePort();
    if (side.store === 'postgres') side.pg = await startPostgres();
    side.server = await side.kind.start(side.port, { root: side.root, env: side.env, node: side.node, nodeArgs: side.nodeArgs, databaseUrl: side.pg?.url });
    if (side.subscriptions > 0) await subscribe(side, side.subscriptions, receiver.port);
    if (!side.server.seeded) await seed(side.port, side.server.token);
    if (endpoint === 'delete') side.pool = new DeletePool(side.server, { root: side.root, node: side.node });
  }
  const warm = await prepared(2);
  await Promise.all(sides.map((s, i) => wrk(s, 2, warm[i])));
  const ratios = [];
  const rpsRatios = [];
  for (let rep = 1; rep <= reps; rep++) {
    const extras = await prepared(seconds);
    const before = sides.map((s) => cpuMs(s.server.pid));
    const dbBefore = sides.map((s) => s.pg?.cpuMs());
    const runs = await Promise.all(sides.map((s, i) => wrk(s, seconds, extras[i])));
    const us = sides.map((s, i) => (1000 * (cpuMs(s.server.pid) - before[i])) / runs[i].requests);
    const dbUs = sides.map((s, i) => s.pg && (1000 * (s.pg.cpuMs() - dbBefore[i])) / runs[i].requests);
    const rps = runs.map((r) => r.requests / r.busy_s);
    const bad = runs.map((r) => Object.entries(r.statuses).filter(([k]) => k !== '200' && k !== '204').map(([k, v]) => `${k}×${v}`).join(' '));
    ratios.push(us[1] / us[0]);
    rpsRatios.push(rps[1] / rps[0]);
    const ms = (us) => (us / 1000).toFixed(2);
    const side = (i) => `${sides[i].name}${sides[i].store === 'postgres' ? '(pg)' : ''} ${us[i].toFixed(1)} µs/req${dbUs[i] === undefined ? '' : ` +db ${dbUs[i].toFixed(1)}`} ` +
      `(${Math.round(rps[i])} req/s, p50 ${ms(runs[i].p50_us)} p99 ${ms(runs[i].p99_us)} ms${bad[i] ? `, ${bad[i]}` : ''})`;
    console.log(`${endpoint} c=${conns} rep ${rep}: ${side(0)}  ${side(1)}  B/A CPU ${(us[1] / us[0]).toFixed(3)} req/s ${(rps[1] / rps[0]).toFixed(3)}`);
  }
  const median = (xs) => xs.sort((x, y) => x - y)[Math.floor(xs.length / 2)];
  const range = (xs) => `range ${xs[0].toFixed(3)}-${xs.at(-1).toFixed(3)}`;
  console.log(`median B/A CPU per request: ${median(ratios).toFixed(3)} (${range(ratios)}); median B/A req/s: ${median(rpsRatios).toFixed(3)} (${range(rpsRatios)})`);
} finally {
  await Promise.all(sides.map((s) => s.server?.stop()));
  for (const s of sides) s.pg?.stop();
  receiver?.close();
}
