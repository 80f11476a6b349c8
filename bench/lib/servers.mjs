// The servers under test: how each is started (pinned to core 0), made ready, seeded and stopped.
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import net from 'node:net';

export const BENCH_DIR = new URL('..', import.meta.url).pathname.replace(/\/$/, '');
export const ROOT = join(BENCH_DIR, '..');
export const SERVER_CORE = '0';
export const LOAD_CORE = '1';
export const SEEDED = 1000;
export const SEED_BASE = 1_000_000;
const OPENAPI = join(ROOT, 'openapi/plant-store.yaml');
const NODE24 = join(BENCH_DIR, 'node_modules/node/bin/node');

/**
 * The builds a script compares side by side: `${prefix}_A` (another built checkout) when given, then `${prefix}_B`
 * (default this checkout), each named, checked to be built, and with its short commit (its path, for a copy of a
 * build outside git).
 */
export function builtSides(prefix) {
  const a = process.env[`${prefix}_A`];
  const sides = [...(a ? [{ name: 'A', root: a }] : []), { name: a ? 'B' : 'this', root: process.env[`${prefix}_B`] ?? ROOT }];
  for (const side of sides) {
    if (!existsSync(join(side.root, 'dist/src/cli/main.js'))) throw new Error(`${side.root}: build it first (npm run build)`);
    try {
      side.commit = execFileSync('git', ['-C', side.root, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    } catch {
      side.commit = side.root;
    }
  }
  return sides;
}

export async function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/**
 * Each kind: name, role (ceiling | floor | subject | peer), and start(port) → { pid, stop(), token, listPath, db?,
 * seeded? (its plants are in place: no seed() POSTs) }; endpoints, where a kind serves only some of the cells.
 */
export const KINDS = [
  { name: 'node:http', role: 'ceiling', start: (port) => startNode(port, ['servers/ceiling-http.mjs']) },
  // GET by id and a durable POST (servers/floor-create.mjs, its writer thread started on the first create).
  { name: 'floor', role: 'floor', endpoints: ['get', 'post'], start: (port, opts) => startFloor(port, opts, 'servers/floor-http.mjs') },
  { name: 'floor-fastify', role: 'floor', endpoints: ['get'], start: (port, opts) => startFloor(port, opts, 'servers/floor-fastify.mjs') },
  // GET /events as a stream (streams.mjs only): plants in memory, each event one write per reader; opts.env's
  // EVENTS_HEARTBEAT_SECONDS as the service reads it.
  { name: 'floor-stream', role: 'floor', endpoints: ['stream'], start: (port, opts) => startNode(port, ['servers/floor-stream.mjs'], opts?.env) },
  { name: 'fastify', role: 'ceiling', start: (port) => startNode(port, ['servers/ceiling-fastify.mjs']) },
  { name: 'plant-store', role: 'subject', start: (port, opts) => startPlantStore(port, opts) },
  { name: 'express+validator', role: 'peer', start: (port) => startNode(port, ['servers/express-validator.mjs']) },
  { name: 'json-server', role: 'peer', start: (port) => startJsonServer(port) },
  { name: 'prism', role: 'peer', start: (port) => startPrism(port) },
];

const TOKEN = 'pst_benchbenchbenchbenchbenchbenchbenchbenchben';

function pinned(cmd, args, env, opts = {}) {
  const child = spawn('taskset', ['-c', opts.cores ?? SERVER_CORE, cmd, ...args], {
    cwd: BENCH_DIR,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', opts.stderr ?? 'inherit'],
  });
  return child;
}

async function waitReady(port, child, path = '/', timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode} before it was ready`);
    try {
      await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(1_000) });
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  throw new Error(`server on port ${port} not ready after ${timeoutMs} ms`);
}

function stopper(child, cleanup = () => {}) {
  return async () => {
    if (child.exitCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(t);
    }
    cleanup();
  };
}

async function startNode(port, args, env = {}) {
  const child = pinned(process.execPath, args, { PORT: String(port), BENCH_TOKEN: TOKEN, OPENAPI_FILE: OPENAPI, ...env });
  await waitReady(port, child);
  return { child, pid: child.pid, token: TOKEN, stop: stopper(child) };
}

async function startJsonServer(port) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-json-server-'));
  writeFileSync(join(dir, 'db.json'), '{"plants": []}\n');
  const child = pinned(process.execPath, [join(BENCH_DIR, 'node_modules/json-server/lib/cli/bin.js'), '--quiet', '--host', '127.0.0.1', '--port', String(port), join(dir, 'db.json')], {});
  await waitReady(port, child, '/plants?_limit=1');
  // json-server has no auth and calls the page size _limit.
  return { child, pid: child.pid, token: TOKEN, listPath: '/plants?_limit=100', stop: stopper(child, () => rmSync(dir, { recursive: true, force: true })) };
}

async function startPrism(port) {
  const child = pinned(NODE24, [join(BENCH_DIR, 'node_modules/@stoplight/prism-cli/dist/index.js'), 'mock', '-h', '127.0.0.1', '-p', String(port), OPENAPI], {}, { stderr: 'ignore' });
  await waitReady(port, child, '/healthz', 60_000);
  return { child, pid: child.pid, token: TOKEN, stop: stopper(child) };
}

/**
 * The real service: bin/plant-store.js serve of the built repo (or of opts.root, another checkout, for pair.mjs),
 * a fresh data dir (or opts.dbFile), a CLI-made token; opts.env overrides the service's environment, opts.node
 * names the Node.js executable (default: the one running the bench) and opts.cores the CPUs (taskset list; core 0).
 * opts.databaseUrl (a postgres:// URL) replaces the SQLite file. One process (WORKERS=1) unless opts.env says
 * otherwise: the cells measure one core.
 */
async function startPlantStore(port, opts = {}) {
  const dir = opts.dbFile || opts.databaseUrl ? undefined : mkdtempSync(join(tmpdir(), 'bench-plant-store-'));
  const db = opts.databaseUrl ? undefined : opts.dbFile ?? join(dir, 'plant-store.db');
  const databaseUrl = opts.databaseUrl ?? `sqlite:${db}`;
  const root = opts.root ?? ROOT;
  const env = { ...process.env, DATABASE_URL: databaseUrl };
  const node = opts.node ?? process.execPath;
  // The token commands use an existing database only (older builds made it themselves): create it first.
  execFileSync(node, [join(root, 'bin/plant-store.js'), 'migrate'], { env, stdio: 'ignore' });
  const out = execFileSync(node, [join(root, 'bin/plant-store.js'), 'token', 'create', '--scopes', 'plants:read,plants:write', '--name', 'bench'], { env, encoding: 'utf8' });
  const token = out.trim().split('\n').pop().trim();
  // One bench token sends far more than the default per-token quota (60,000/min): keep the limiter in the
  // measured path, with a quota the run cannot reach.
  // Started as `npm start` starts it (package.json), V8 flag included.
  const child = pinned(node, ['--max-semi-space-size=16', ...(opts.nodeArgs ?? []), join(root, 'bin/plant-store.js'), 'serve'], {
    DATABASE_URL: databaseUrl, PORT: String(port), HOST: '127.0.0.1', BOOTSTRAP_TOKEN: 'false', LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
    RATE_LIMIT_PER_TOKEN: '100000000', WORKERS: '1', ...opts.env,
  }, { cores: opts.cores });
  await waitReady(port, child, '/healthz');
  return { child, pid: child.pid, token, db, databaseUrl, stop: stopper(child, () => dir && rmSync(dir, { recursive: true, force: true })) };
}

/**
 * The floors (`script`: servers/floor-http.mjs, GET by id and POST; floor-fastify.mjs, GET by id) on a plant-store
 * database: migrated, given a token and the SEEDED plants of seed() by this checkout's (or opts.root's) CLI,
 * `plant-store import` applying POST's rules, so the file and its rows are the service's own; floor-http's
 * creates are written to it by the same statements as the service's. opts.nodeArgs: Node flags (pair's
 * PAIR_X_NODE_ARGS, e.g. --cpu-prof).
 */
async function startFloor(port, opts, script) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-floor-'));
  const db = join(dir, 'plant-store.db');
  const cli = join(opts?.root ?? ROOT, 'bin/plant-store.js');
  const env = { ...process.env, DATABASE_URL: `sqlite:${db}` };
  execFileSync(process.execPath, [cli, 'migrate'], { env, stdio: 'ignore' });
  const out = execFileSync(process.execPath, [cli, 'token', 'create', '--scopes', 'plants:read,plants:write', '--name', 'bench'], { env, encoding: 'utf8' });
  const token = out.trim().split('\n').pop().trim();
  const lines = Array.from({ length: SEEDED }, (_, k) => `{"id":${SEED_BASE + 1 + k},"name":"Seed ${1 + k}","tag":"seed"}\n`).join('');
  execFileSync(process.execPath, [cli, 'import', '--format', 'jsonl', '-'], { env, input: lines, stdio: ['pipe', 'ignore', 'ignore'] });
  const child = pinned(process.execPath, [...(opts?.nodeArgs ?? []), join(BENCH_DIR, script)], {
    PORT: String(port), DATABASE_FILE: db, RATE_LIMIT_PER_TOKEN: '100000000',
  }, { cores: opts?.cores });
  await waitReady(port, child);
  return { child, pid: child.pid, token, db, seeded: true, stop: stopper(child, () => rmSync(dir, { recursive: true, force: true })) };
}

/** Creates SEEDED plants (ids SEED_BASE+1..) so GET /plants/{id} finds them; tag "seed", not counted as bench rows. */
export async function seed(port, token, count = SEEDED) {
  const agent = { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } };
  for (let i = 1; i <= count; i += 50) {
    await Promise.all(Array.from({ length: Math.min(50, count - i + 1) }, (_, k) =>
      fetch(`http://127.0.0.1:${port}/plants`, { ...agent, body: `{"id":${SEED_BASE + i + k},"name":"Seed ${i + k}","tag":"seed"}` }).then((r) => r.arrayBuffer())));
  }
}

/** A service's settings written as "KEY=value KEY=value" (pair's PAIR_X_ENV, solo's SOLO_ENV). */
export const settings = (spec = '') =>
  Object.fromEntries(spec.split(/\s+/).filter(Boolean).map((kv) => {
    const i = kv.indexOf('=');
    if (i < 1) throw new Error(`expected KEY=value, got ${kv}`);
    return [kv.slice(0, i), kv.slice(i + 1)];
  }));

/** The pids of a process's children (a multi-process server's workers). */
export function childPids(pid) {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** Resident set size of a process in MB (VmRSS), or NaN once it is gone. */
export function rssMb(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    return Number(/VmRSS:\s+(\d+)/.exec(status)[1]) / 1024;
  } catch {
    return NaN;
  }
}

/** CPU time of every thread of the process and of its live descendants (WORKERS > 1) so far, in ms. */
export function cpuMs(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  let ms = (Number(fields[11]) + Number(fields[12])) * (1000 / 100);
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let children = '';
    try {
      children = readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8');
    } catch {
      continue; // the thread ended meanwhile
    }
    for (const child of children.split(' ').filter(Boolean)) ms += cpuMs(Number(child));
  }
  return ms;
}
