// `litestream replicate` beside the SQLite store of serve: started before the first request is answered,
// restarted with back-off when it exits, stopped after the store closes. Its JSON log lines go through the
// service's logger; how far each replica is behind (the age of the oldest change it does not hold yet) and
// what failed are published as plant-store metrics.
// Replication never holds up serving: nothing here is on the request path, and a replica that cannot be
// reached only shows as lag, failures and log lines.
import { spawn, type ChildProcess } from 'node:child_process';
import { statusFile, type ReplicationStatus } from './replication-status.js';
import { renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Logger } from 'pino';
import { Counter, Gauge, type Registry } from 'prom-client';
import { litestreamBinary, litestreamEnv, supervisedCommand, writeLitestreamConfig } from './litestream.js';
import type { Replica } from './replica-urls.js';
import { endOf, shadowEnd } from './shadow-wal.js';
import { createOwnerOnlyFile } from '../kit/owner-only-files.js';

const FIRST_RESTART_DELAY_MS = 1_000;
const MAX_RESTART_DELAY_MS = 30_000;
/** A run this long resets the back-off: the next exit is restarted after the first delay again. */
const STEADY_RUN_MS = 60_000;
const POLL_MS = 1_000;
const START_WAIT_MS = 5_000;
const STOP_WAIT_MS = 10_000;
/**
 * A replica this far behind, with no segment written for as long, while Litestream runs is taken as stalled,
 * and Litestream is restarted at once (no back-off): v0.3.13's SFTP client waits for ever on a connection that
 * was cut (seen here: no error, no retry, after the server came back too), and a new process connects afresh.
 */
const STALL_MIN_MS = 10_000;
const STALL_INTERVALS = 10;
/** Litestream copies new WAL frames into its shadow WAL once a second (its monitor interval), before a segment is cut. */
const SHADOW_COPY_MS = 1_000;
/** Litestream's routine lines, one per replica per sync: debug, not info. */
const ROUTINE = new Set(['write wal segment', 'wal segment written', 'write snapshot', 'snapshot written']);

export interface ReplicationOptions {
  database: string;
  replicas: readonly Replica[];
  syncIntervalMs: number;
  /** Config.litestreamEnv. */
  env: Readonly<Record<string, string>>;
  logger: Logger;
  now?: () => number;
}

export interface Replication {
  /** Spawns Litestream and waits (bounded) until it replicates; throws only when it cannot be run at all. */
  start(): Promise<void>;
  /** SIGTERM, then SIGKILL after a while; resolves once Litestream has exited. */
  stop(): Promise<void>;
  /** The replication metrics, in this process's registry. */
  register(registry: Registry): void;
}

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
  /** Litestream was stopped here after a stall: it is started again after the first delay, whatever the back-off. */
  let restartNow = false;
  let pollTimer: NodeJS.Timeout | undefined;
  let launchedAt = now();
  const stallMs = Math.max(STALL_MIN_MS, STALL_INTERVALS * syncIntervalMs);
  const failures = new Map(replicas.map((r) => [r.name, 0]));

  // Lag: how long the oldest change not yet on a replica has been waiting, 0 when it holds every change.
  // Changes are seen as the store's WAL file being written (its mtime, read every second). A replica holds
  // every change made before the start of its last segment or snapshot written, less Litestream's one-second
  // copy of the WAL into its shadow WAL (made before the segment is cut): that keeps up under load. When the
  // store goes quiet, the last changes are in a segment that started less than a second after them: they are
  // held once the replica's end is the shadow WAL's end and the WAL has no frame the shadow WAL lacks (level).
  // Not Litestream's positions alone: when one replica hangs, Litestream's shadow WAL stops too, and every
  // replica then looks level with it, while the WAL shows the frames it did not copy.
  const startedAt = now();
  let changes: number[] = [];
  let lastChange = 0;
  const heldUpTo = new Map<string, number>(replicas.map((r) => [r.name, startedAt]));
  const writing = new Map<string, number>();
  /** Each replica's end (generation/index:offset), from its last segment or snapshot written. */
  const ends = new Map<string, string>();
  /** When each replica last wrote a segment or snapshot: a replica that does is not stalled. */
  const progress = new Map<string, number>(replicas.map((r) => [r.name, startedAt]));
  /** When each replica last wrote a segment or snapshot, in ms since the epoch (the status file's lastSyncAt). */
  const synced = new Map<string, number>();
  const lagOf = (name: string): number => {
    const held = heldUpTo.get(name) ?? startedAt;
    const waiting = changes.find((c) => c > held);
    return waiting === undefined ? 0 : Math.max(0, (now() - waiting) / 1_000);
  };

  function watchChanges(): void {
    let mtime: number;
    try {
      mtime = statSync(`${database}-wal`).mtimeMs;
    } catch {
      return;
    }
    if (mtime !== lastChange) {
      lastChange = mtime;
      // The change's time on this supervisor's clock (the file's is the system's). Changes before this process
      // started are the first sync's to send: they wait from the start.
      changes.push(Math.max(now() - Math.max(0, Date.now() - mtime), startedAt));
    }
    // Read after the mtime: a change made after it is either seen here (not level) or is a later change.
    const end = shadowEnd(database);
    if (end !== undefined) {
      const seen = changes.at(-1) ?? startedAt;
      for (const r of replicas) if (ends.get(r.name) === end) heldUpTo.set(r.name, Math.max(heldUpTo.get(r.name) ?? 0, seen));
    }
    const least = Math.min(...heldUpTo.values());
    changes = changes.filter((c) => c > least);
  }

  function poll(): void {
    watchChanges();
    writeStatus();
    const proc = child;
    if (!proc || stopping || now() - launchedAt < stallMs) return;
    // Changes waiting and no progress: a quiet store (nothing waiting) or a slow replica (segments written) is not stalled.
    const stalled = replicas.filter((r) => lagOf(r.name) * 1_000 >= stallMs && now() - (progress.get(r.name) ?? startedAt) >= stallMs);
    if (stalled.length === 0) return;
    for (const r of stalled) failures.set(r.name, (failures.get(r.name) ?? 0) + 1);
    log.warn({ replicas: stalled.map((r) => r.name), lagSeconds: stalled.map((r) => Math.round(lagOf(r.name))) }, 'a replica has not synced for a while: restarting Litestream');
    launchedAt = now();
    restartNow = true;
    proc.kill('SIGTERM');
    // One that hangs on its way out too (a sync it cannot finish) is killed.
    setTimeout(() => proc.exitCode === null && proc.signalCode === null && proc.kill('SIGKILL'), STOP_WAIT_MS / 2).unref();
  }

  /** What `replica status` reports as each replica's lag: this process's figures, beside the store. */
  function writeStatus(): void {
    const status: ReplicationStatus = {
      at: now(),
      replicas: Object.fromEntries(replicas.map((r) => [r.name, { lagSeconds: lagOf(r.name), ...(synced.has(r.name) && { lastSyncAt: synced.get(r.name) }) }])),
    };
    const file = statusFile(database);
    try {
      rmSync(`${file}.tmp`, { force: true });
      createOwnerOnlyFile(`${file}.tmp`);
      writeFileSync(`${file}.tmp`, JSON.stringify(status));
      renameSync(`${file}.tmp`, file);
    } catch (err) {
      log.debug({ err }, 'the replication status could not be written');
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
        if (replica !== undefined && (msg === 'write wal segment' || msg === 'write snapshot')) writing.set(replica, now() - SHADOW_COPY_MS);
        if (replica !== undefined && (msg === 'wal segment written' || msg === 'snapshot written')) {
          progress.set(replica, now());
          synced.set(replica, Date.now());
          const end = endOf(fields.position, msg === 'wal segment written' ? fields.sz : 0);
          if (end !== undefined) ends.set(replica, end);
          if (writing.has(replica)) heldUpTo.set(replica, Math.max(heldUpTo.get(replica) ?? 0, writing.get(replica)!));
        }
        if (ROUTINE.has(String(msg))) log.debug(fields, text);
        else log.info(fields, text);
    }
  }

  async function launch(): Promise<void> {
    config?.remove();
    config = writeLitestreamConfig({ database, replicas, syncIntervalMs });
    const [command, args] = supervisedCommand(binary, ['replicate', '-config', config.file]);
    const started = now();
    launchedAt = started;
    writing.clear();
    const proc = spawn(command, args, { env: litestreamEnv(replicas, options.env), stdio: ['pipe', 'pipe', 'pipe'], detached: true });
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
        // Its watcher ends on the pipe's end, not on a signal sent to a pid that may be reused.
        proc.stdin?.destroy();
        ready();
        resolve();
        if (stopping) return;
        restarts++;
        if (now() - started >= STEADY_RUN_MS) delay = FIRST_RESTART_DELAY_MS;
        // A stop after a stall is no crash: started again at once, the back-off kept for exits of its own.
        const wait = restartNow ? FIRST_RESTART_DELAY_MS : delay;
        if (!restartNow) delay = Math.min(delay * 2, MAX_RESTART_DELAY_MS);
        restartNow = false;
        log.error({ code, signal, restartInMs: wait }, 'litestream exited; replication is paused until it restarts');
        restartTimer = setTimeout(() => {
          restartTimer = undefined;
          void launch().catch((err: unknown) => log.error({ err }, 'litestream could not be restarted'));
        }, wait);
        restartTimer.unref();
      });
    });
    await Promise.race([replicating, new Promise((resolve) => setTimeout(resolve, START_WAIT_MS).unref())]);
    if (child === proc) log.info({ replicas: replicas.map((r) => r.shown), syncIntervalMs, pid: proc.pid }, 'replicating the store with Litestream');
  }

  return {
    async start() {
      await launch();
      if (!child) throw new Error('Litestream could not be started: see the log lines above.');
      pollTimer = setInterval(poll, POLL_MS);
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
        help: 'Errors Litestream reported for the replica (a sync, a snapshot or a listing that failed), and stalls (behind by max(10 s, 10 sync intervals) with no segment written for as long, after which Litestream is restarted).',
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
        help: 'Times Litestream exited (or was stopped after a stall) while the service ran, and was started again.',
        registers: [registry],
        aggregator: 'max',
        collect() {
          this.reset();
          this.inc(restarts);
        },
      });
    },
  };
}
