// HAProxy from Debian as the load balancer in front of several `plant-store serve` processes: a generated
// config in a temp dir, run in the foreground as a child process, health-checking every backend on /readyz.
// Its admin socket tells the tests which backends it currently counts as up. And HAProxy in TCP mode in front
// of PostgreSQL, the name that moves to the promoted standby in a failover (docs/deployment.md, PostgreSQL).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../helpers/ports.js';
import { eventually, within } from '../helpers/sleep.js';

/** Anything with node:test's `after` (a TestContext, or the standalone script's own list). */
export interface Scope {
  after(fn: () => unknown): void;
}

export interface Haproxy {
  url: string;
  port: number;
  /** Backend server name -> HAProxy's status for it (`UP`, `DOWN`, `UP 1/2`, ...). */
  states(): Promise<Map<string, string>>;
  /** Waits (bounded) until every named backend has the wanted status. */
  waitFor(wanted: Record<string, 'UP' | 'DOWN'>, timeoutMs?: number): Promise<void>;
  /** Current sessions per backend server (HAProxy's `scur`). */
  sessions(): Promise<Map<string, number>>;
  /** A command on the admin socket, e.g. `set server plant_store/s1 state drain`; resolves with the answer. */
  command(line: string): Promise<string>;
  /** What HAProxy printed (warnings, alerts). */
  output(): string;
  stop(): Promise<void>;
}

export function haproxyAvailable(): boolean {
  return spawnSync('haproxy', ['-v'], { stdio: 'ignore' }).status === 0;
}

/**
 * The config docs/deployment.md (Several instances) shows, with test-sized intervals: round robin, /readyz checks
 * every 500 ms (2 failures mark a server down, 2 successes up again), a refused connection is retried on
 * another server (`option redispatch`; HAProxy never re-sends a request a server has already received), and
 * HAProxy's own 502/503/504 answers in the contract's Error shape, the 503 with Retry-After.
 */
export function haproxyConfig(listenPort: number, backends: { name: string; port: number }[], adminSocket: string): string {
  return [
    'global',
    '  maxconn 2000',
    `  stats socket ${adminSocket} mode 600 level admin`,
    'defaults',
    '  mode http',
    '  timeout connect 2s',
    '  timeout client 35s',
    '  timeout server 35s',
    '  timeout http-request 10s',
    '  retries 2',
    '  option redispatch',
    '  option forwardfor',
    ...HAPROXY_ERRORS,
    'frontend api',
    `  bind 127.0.0.1:${listenPort}`,
    '  default_backend plant_store',
    'backend plant_store',
    '  balance roundrobin',
    '  option httpchk GET /readyz',
    '  http-check expect status 200',
    '  default-server inter 500ms fall 2 rise 2',
    ...backends.map((b) => `  server ${b.name} 127.0.0.1:${b.port} check`),
    '',
  ].join('\n');
}

/** HAProxy answers these itself (no instance ready; an instance died or timed out mid-request) in the Error shape. */
const HAPROXY_ERRORS = [
  `  http-error status 502 content-type application/json string '{"error":502,"message":"The instance failed while answering; the request may or may not have been applied."}'`,
  `  http-error status 503 content-type application/json string '{"error":503,"message":"No instance is ready; retry later."}' hdr Retry-After 1`,
  `  http-error status 504 content-type application/json string '{"error":504,"message":"The instance did not answer in time; the request may or may not have been applied."}'`,
];

/** Starts HAProxy in the foreground (`-db`) on a free loopback port; stopped after the scope. */
export async function startHaproxy(scope: Scope, backends: { name: string; port: number }[]): Promise<Haproxy> {
  return launch(scope, (port, socket) => haproxyConfig(port, backends, socket), 'plant_store');
}

/** A PostgreSQL server behind HAProxy: `disabled` ones are listed but get no connection until switched to. */
export interface PgBackend {
  name: string;
  port: number;
  disabled?: boolean;
}

/**
 * The PostgreSQL front docs/deployment.md shows, with test-sized check intervals: TCP mode, one server in
 * service at a time (HAProxy's checks cannot tell a primary from a standby, so the operator says which one
 * is), and the sessions of a server that fails its check cut at once, so clients notice without waiting for
 * TCP. Long client and server timeouts: the service's connections, its LISTEN one included, may stay idle.
 */
export function haproxyPgConfig(listenPort: number, servers: PgBackend[], adminSocket: string): string {
  return [
    'global',
    '  maxconn 2000',
    `  stats socket ${adminSocket} mode 600 level admin`,
    'defaults',
    '  mode tcp',
    '  timeout connect 2s',
    '  timeout client 30m',
    '  timeout server 30m',
    'frontend postgres',
    `  bind 127.0.0.1:${listenPort}`,
    '  default_backend pg',
    'backend pg',
    '  default-server inter 500ms fall 2 rise 2 on-marked-down shutdown-sessions',
    ...servers.map((s) => `  server ${s.name} 127.0.0.1:${s.port} check${s.disabled ? ' disabled' : ''}`),
    '',
  ].join('\n');
}

/**
 * The failover switch of docs/deployment.md on the admin socket: the old server into maintenance and its
 * sessions cut (whether it is dead or not, no client keeps talking to it), then the new one in service.
 */
export async function switchPgServer(lb: Haproxy, from: string, to: string): Promise<void> {
  for (const line of [`set server pg/${from} state maint`, `shutdown sessions server pg/${from}`, `set server pg/${to} state ready`]) {
    const answer = (await lb.command(line)).trim();
    if (answer !== '') throw new Error(`haproxy: "${line}" answered ${answer}`);
  }
}

/** HAProxy in TCP mode in front of PostgreSQL servers (haproxyPgConfig); `url` is unused, `port` is where to connect. */
export async function startPgHaproxy(scope: Scope, servers: PgBackend[]): Promise<Haproxy> {
  return launch(scope, (port, socket) => haproxyPgConfig(port, servers, socket), 'pg');
}

async function launch(scope: Scope, config: (port: number, socket: string) => string, backend: string): Promise<Haproxy> {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-haproxy-'));
  const socket = join(dir, 'admin.sock');
  const file = join(dir, 'haproxy.cfg');
  let out = '';
  let proc: ChildProcess | undefined;
  let port = 0;
  // A port found free may be taken before HAProxy binds it: try a few.
  for (let attempt = 0; attempt < 5 && !proc; attempt++) {
    port = await freePort();
    writeFileSync(file, config(port, socket));
    const p = spawn('haproxy', ['-db', '-f', file], { stdio: ['ignore', 'pipe', 'pipe'] });
    p.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    const started = await waitForSocket(socket, p, 10_000);
    if (started) proc = p;
    else p.kill('SIGKILL');
  }
  if (!proc) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`haproxy did not start:\n${out}`);
  }
  const running = proc;
  const exited = new Promise<void>((resolve) => running.once('exit', () => resolve()));
  const stop = async () => {
    if (running.exitCode === null && running.signalCode === null) {
      running.kill('SIGTERM');
      await within(exited, 3_000, undefined);
      if (running.exitCode === null && running.signalCode === null) running.kill('SIGKILL');
    }
    rmSync(dir, { recursive: true, force: true });
  };
  scope.after(stop);

  /** One column of `show stat` for every server of the backend. */
  const column = async (name: string) => {
    const csv = await adminCommand(socket, 'show stat');
    const lines = csv.split('\n').filter(Boolean);
    const header = lines[0]!.replace(/^# /, '').split(',');
    const [px, sv, col] = ['pxname', 'svname', name].map((c) => header.indexOf(c));
    const out = new Map<string, string>();
    for (const line of lines.slice(1)) {
      const cols = line.split(',');
      if (cols[px!] === backend && !['FRONTEND', 'BACKEND'].includes(cols[sv!]!)) out.set(cols[sv!]!, cols[col!]!);
    }
    return out;
  };
  const states = () => column('status');
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    states,
    async waitFor(wanted, timeoutMs = 15_000) {
      let now = new Map<string, string>();
      await eventually(
        async () => ((now = await states()), Object.entries(wanted).every(([name, s]) => now.get(name) === s)),
        () => `haproxy backends ${JSON.stringify(wanted)}, not ${JSON.stringify([...now])}`,
        timeoutMs,
        100,
      );
    },
    async sessions() {
      return new Map([...(await column('scur'))].map(([k, v]) => [k, Number(v)]));
    },
    command: (line) => adminCommand(socket, line),
    output: () => out,
    stop,
  };
}

async function waitForSocket(path: string, proc: ChildProcess, timeoutMs: number): Promise<boolean> {
  const answers = () => adminCommand(path, 'show info').then(() => true, () => proc.exitCode !== null && 'exited');
  return eventually(answers, 'the haproxy admin socket', timeoutMs, 50).then((v) => v === true, () => false);
}

/** One command on HAProxy's admin socket; the answer is everything it writes before closing. */
function adminCommand(path: string, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect(path);
    let data = '';
    const timer = setTimeout(() => {
      s.destroy();
      reject(new Error(`haproxy admin socket: no answer to "${command}"`));
    }, 3_000);
    s.on('connect', () => s.write(`${command}\n`));
    s.on('data', (d: Buffer) => (data += d.toString()));
    s.on('end', () => {
      clearTimeout(timer);
      resolve(data);
    });
    s.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
}
