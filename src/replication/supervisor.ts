// `litestream replicate` beside the SQLite store of serve: started before the first request is answered,
// restarted with back-off when it exits, stopped after the store closes. Its JSON log lines go through the
// service's logger; how far each replica is behind is read from Litestream's own metrics endpoint (the
// position of the local shadow WAL against each replica's) and published as plant-store metrics.
// Replication never holds up serving: nothing here is on the request path, and a replica that cannot be
// reached only shows as lag, failures and log lines.
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';
import type { Logger } from 'pino';
import { Counter, Gauge, type Registry } from 'prom-client';
import { litestreamBinary, litestreamEnv, supervisedCommand, writeLitestreamConfig } from './litestream.js';
import type { Replica } from './replica-urls.js';

const FIRST_RESTART_DELAY_MS = 1_000;
const MAX_RESTART_DELAY_MS = 30_000;
/** A run this long resets the back-off: the next exit is restarted after the first delay again. */
const STEADY_RUN_MS = 60_000;
const POLL_MS = 1_000;
const START_WAIT_MS = 5_000;
const STOP_WAIT_MS = 10_000;
/** Litestream's routine lines, one per replica per sync: debug, not info. */
const ROUTINE = new Set(['write wal segment', 'wal segment written', 'write snapshot', 'snapshot written']);

export interface ReplicationOptions {
  database: string;
  replicas: readonly Replica[];
  syncIntervalMs: number;
  logger: Logger;
  now?: () => number;
}

export interface ReplicaState {
  name: string;
  url: string;
  /** Seconds since the replica last held every change the store had made. */
  lagSeconds: number;
  failures: number;
}

export interface Replication {
  /** Spawns Litestream and waits (bounded) until it replicates; throws only when it cannot be run at all. */
  start(): Promise<void>;
  /** SIGTERM, then SIGKILL after a while; resolves once Litestream has exited. */
  stop(): Promise<void>;
  /** The replication metrics, in this process's registry. */
  register(registry: Registry): void;
  states(): ReplicaState[];
}

interface Position {
  index: number;
  offset: number;
}

const before = (a: Position, b: Position) => a.index < b.index || (a.index === b.index && a.offset < b.offset);

export function createReplication(options: ReplicationOptions): Replication {
  const { database, replicas, syncIntervalMs } = options;
  const now = options.now ?? Date.now;
  const log = options.logger.child({ component: 'replication' });
  const binary = litestreamBinary();
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  let config: { file: string; remove(): void } | undefined;
  let stopping = false;
  let restarts = 0;
  let delay = FIRST_RESTART_DELAY_MS;
  let restartTimer: NodeJS.Timeout | undefined;
  let pollTimer: NodeJS.Timeout | undefined;
  let metricsUrl = '';
  const failures = new Map(replicas.map((r) => [r.name, 0]));
  const onExit: (() => void)[] = [];

  // Positions of the local shadow WAL in the order they were seen, with when: a replica at a position before
  // one of them has been behind since that one was first seen. `Infinity` marks a time Litestream could not be
  // asked (not running): whatever was written since is not known to be anywhere else.
  let seen: (Position & { at: number })[] = [{ index: Infinity, offset: 0, at: now() }];
  const replicaAt = new Map<string, Position | undefined>(replicas.map((r) => [r.name, undefined]));
  const lagOf = (name: string): number => {
    const at = replicaAt.get(name);
    const since = Math.min(...seen.filter((p) => at === undefined || before(at, p)).map((p) => p.at));
    return since === Infinity ? 0 : Math.max(0, (now() - since) / 1_000);
  };

  function recordUnknown(): void {
    if (!seen.some((p) => p.index === Infinity)) seen.push({ index: Infinity, offset: 0, at: now() });
  }

  function recordPositions(text: string): void {
    const value = (name: string, replica?: string): number | undefined => {
      const label = replica === undefined ? '' : `[^}]*name="${replica}"`;
      const m = new RegExp(`^${name}\\{[^}]*${label}[^}]*\\} (\\S+)$`, 'm').exec(text);
      return m ? Number(m[1]) : undefined;
    };
    const index = value('litestream_shadow_wal_index');
    const offset = value('litestream_shadow_wal_size');
    if (index === undefined || offset === undefined) return;
    const shadow = { index, offset };
    const last = seen.filter((p) => p.index !== Infinity).at(-1);
    // A new generation starts the positions again from 0.
    if (last && before(shadow, last)) seen = seen.filter((p) => p.index === Infinity);
    if (!last || before(last, shadow)) seen.push({ ...shadow, at: now() });
    for (const r of replicas) {
      const ri = value('litestream_replica_wal_index', r.name);
      const ro = value('litestream_replica_wal_offset', r.name);
      replicaAt.set(r.name, ri === undefined || ro === undefined ? undefined : { index: ri, offset: ro });
    }
    const positions = [...replicaAt.values()];
    if (positions.every((p) => p !== undefined && !before(p, shadow))) {
      seen = [];
      return;
    }
    // What every replica holds is no longer waited for.
    if (positions.every((p) => p !== undefined)) {
      const least = positions.reduce((a, b) => (before(b!, a!) ? b : a))!;
      seen = seen.filter((p) => before(least, p));
    }
  }

  async function poll(): Promise<void> {
    if (!child || metricsUrl === '') return recordUnknown();
    try {
      const res = await fetch(metricsUrl, { signal: AbortSignal.timeout(POLL_MS * 2) });
      recordPositions(await res.text());
    } catch {
      recordUnknown();
    }
  }

  function forward(line: string): void {
    let entry: Record<string, unknown>;
    try {
      entry = JSON.parse(line) as Record<string, unknown>;
      if (entry === null || typeof entry !== 'object') throw new Error('not an object');
    } catch {
      // Lines of libraries Litestream uses (the AWS SDK's warnings), as they are, bounded.
      if (line.trim() !== '') log.warn({ litestream: line.slice(0, 1_000) }, 'litestream');
      return;
    }
    const { time: _time, level, msg, ...fields } = entry;
    const text = `litestream: ${String(msg ?? '')}`;
    const replica = typeof fields.replica === 'string' ? fields.replica : undefined;
    switch (String(level)) {
      case 'ERROR':
        if (replica !== undefined && failures.has(replica)) failures.set(replica, failures.get(replica)! + 1);
        log.error(fields, text);
        break;
      case 'WARN':
        log.warn(fields, text);
        break;
      case 'DEBUG':
        log.debug(fields, text);
        break;
      default:
        if (ROUTINE.has(String(msg))) log.debug(fields, text);
        else log.info(fields, text);
    }
  }

  async function launch(): Promise<void> {
    const port = await freePort();
    metricsUrl = `http://127.0.0.1:${port}/metrics`;
    config?.remove();
    config = writeLitestreamConfig({ database, replicas, syncIntervalMs, metricsAddress: `127.0.0.1:${port}` });
    const [command, args] = supervisedCommand(binary, ['replicate', '-config', config.file]);
    const started = now();
    const proc = spawn(command, args, { env: litestreamEnv(replicas), stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    // Not waited for by this process's event loop: serve ends when its work does, and Litestream with it.
    proc.unref();
    child = proc;
    let ready!: () => void;
    const replicating = new Promise<void>((resolve) => (ready = resolve));
    let told = 0;
    for (const stream of [proc.stdout!, proc.stderr!]) {
      createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => {
        forward(line);
        if (line.includes('"replicating to"') && ++told === replicas.length) ready();
      });
    }
    exited = new Promise<void>((resolve) => {
      proc.once('error', (err) => {
        log.error({ err }, 'litestream could not be started');
        child = undefined;
        resolve();
        ready();
      });
      proc.once('exit', (code, signal) => {
        child = undefined;
        ready();
        resolve();
        for (const f of onExit.splice(0)) f();
        if (stopping) return;
        recordUnknown();
        restarts++;
        if (now() - started >= STEADY_RUN_MS) delay = FIRST_RESTART_DELAY_MS;
        log.error({ code, signal, restartInMs: delay }, 'litestream exited; replication is paused until it restarts');
        restartTimer = setTimeout(() => {
          restartTimer = undefined;
          void launch().catch((err: unknown) => log.error({ err }, 'litestream could not be restarted'));
        }, delay);
        restartTimer.unref();
        delay = Math.min(delay * 2, MAX_RESTART_DELAY_MS);
      });
    });
    await Promise.race([replicating, new Promise((resolve) => setTimeout(resolve, START_WAIT_MS).unref())]);
  }

  return {
    async start() {
      await launch();
      if (!child) throw new Error('Litestream could not be started: see the log lines above.');
      log.info({ replicas: replicas.map((r) => r.shown), syncIntervalMs, pid: child.pid }, 'replicating the store with Litestream');
      pollTimer = setInterval(() => void poll(), POLL_MS);
      pollTimer.unref();
    },
    async stop() {
      stopping = true;
      clearInterval(pollTimer);
      clearTimeout(restartTimer);
      const proc = child;
      if (proc) {
        // Litestream syncs what it has not sent yet before it exits on SIGTERM.
        proc.kill('SIGTERM');
        const kill = setTimeout(() => proc.kill('SIGKILL'), STOP_WAIT_MS);
        await exited;
        clearTimeout(kill);
      }
      config?.remove();
      log.info('replication stopped');
    },
    register(registry) {
      new Gauge({
        name: 'plant_store_replication_lag_seconds',
        help: 'Seconds since the replica last held every change of the store (0 while it does); grows while the replica cannot be reached.',
        labelNames: ['replica'] as const,
        registers: [registry],
        aggregator: 'max',
        collect() {
          for (const r of replicas) this.set({ replica: r.name }, lagOf(r.name));
        },
      });
      new Counter({
        name: 'plant_store_replication_failures_total',
        help: 'Errors Litestream reported for the replica (a sync, a snapshot or a listing that failed).',
        labelNames: ['replica'] as const,
        registers: [registry],
        aggregator: 'max',
        collect() {
          this.reset();
          for (const r of replicas) this.inc({ replica: r.name }, failures.get(r.name) ?? 0);
        },
      });
      new Counter({
        name: 'plant_store_replication_restarts_total',
        help: 'Times Litestream exited while the service ran and was started again.',
        registers: [registry],
        aggregator: 'max',
        collect() {
          this.reset();
          this.inc(restarts);
        },
      });
    },
    states() {
      return replicas.map((r) => ({ name: r.name, url: r.shown, lagSeconds: lagOf(r.name), failures: failures.get(r.name) ?? 0 }));
    },
  };
}

/** A free loopback port for Litestream's metrics (it cannot report the port it got for :0). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
