// The primary process of a multi-process server (WORKERS > 1): it opens and migrates the store, forks the HTTP
// workers that share the port, replaces a worker that dies, adds up their metrics for GET /metrics, keeps the
// counts of the rate limits for all of them (on either engine), and on SIGTERM lets every worker drain before
// it closes. On a shared-writer engine (a SQLite file) it is also the
// one writer: workers send every write here (their plant writes join one group commit: one fsync for all), and it
// runs the background services (background.ts: sequencer, retention, dispatcher), so each event is delivered
// once; it builds no HTTP app. A database server (PostgreSQL) needs none of that, and each worker is a whole
// instance, as several machines would be.
import cluster, { type Worker } from 'node:cluster';
import { AggregatorRegistry } from 'prom-client';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { createTokenService } from '../auth/token-service.js';
import { createBackground, type BackgroundServices } from './background.js';
import { createMetrics, type Metrics } from '../metrics/metrics.js';
import { createObservers, observationLog } from '../observations/observations.js';
import { processSharing } from '../storage/open-store.js';
import type { Store } from '../storage/store.js';
import { announce, bootstrapToken, publicUrl, openServiceStore, startReplication, stopSignals } from './startup.js';
import { createLimitKeeper } from '../limits/shared-limits.js';
import type { PrimaryMethods, WorkerMethods } from './cluster-messages.js';
import { createChannel, ipcCarrier, type Channel, type Handlers } from '../kit/channel.js';
import { keepHeapSmall, MIB } from './idle-memory.js';
import { takeOverThenOffer, writePidFile, type Handover, type HandoverOffer, type Succession } from './takeover.js';
import { reloadOnHangup } from './reload.js';

/** How long a metrics collection waits for each worker's answer. */
const COLLECT_TIMEOUT_MS = 3_000;
/**
 * A worker that dies within this long of its start counts as a crash loop: the next start in its slot waits
 * longer, while another worker serves.
 */
const QUICK_DEATH_MS = 5_000;
const MAX_RESTART_DELAY_MS = 10_000;

export async function runPrimary(config: Config, logger: Logger, count: number, succession: Succession = {}): Promise<number> {
  const log = logger.child({ role: 'primary' });
  // From the start: a signal during start-up stops the server once it is up, rather than killing this process
  // under its workers.
  const stop = stopSignals();
  const sharedWriter = processSharing(config.databaseUrl) === 'shared-writer';
  // Taking over a SQLite file: the passes, deliveries and Litestream start once the running server is done.
  const afterHandover = sharedWriter && succession.running !== undefined;
  // The primary of a shared writer does little but commit: on its own thread, a commit skips two thread hops
  // (2 workers, POST c=256 on 2 cores: 11.0-11.8k against 8.7-9.2k req/s), and the fsync that blocks its event
  // loop delays only what waits for commits anyway (workers' batches, which then join the next one), passes,
  // deliveries and the hand-out of new connections.
  const store = await openServiceStore(config, log, { commitOnThisThread: sharedWriter });
  const startReplicating = () =>
    sharedWriter
      ? startReplication(config, log).catch(async (err: unknown) => {
          await store.close();
          throw err;
        })
      : undefined;
  let replication = afterHandover ? undefined : await startReplicating();
  const tokens = createTokenService(store, { cacheTtlMs: config.tokenCacheTtlMs });
  // Before the workers open their pools, so the warning comes ahead of the start line.
  if (!sharedWriter) await warnAboutConnections(store, count, config.databasePoolSize, log);
  /** Each worker, and the channel to it. */
  const workers = new Map<Worker, Channel<WorkerMethods>>();
  const writer = sharedWriter ? startWriter(config, store, log, () => broadcast(workers)) : undefined;
  if (writer && !afterHandover) writer.services.start();
  if (writer) replication?.register(writer.metrics.registry);
  const metrics = gatherMetrics(workers, writer?.metrics);
  const handlers = answerWorkers({ store, writer: writer?.services, metrics, limits: createLimitKeeper(config), log });
  const pool = workerPool(workers, log, handlers, () => stop.signal !== undefined);

  const outcome = await startWorkers(pool, count, config.port);
  // After a stop signal, a worker that exits during start-up stopped as told (or died of the signal before it
  // could heed it): the server stops as it would once up.
  if ('failed' in outcome && stop.signal === undefined) {
    log.error({ exit: outcome.failed }, 'a worker could not start (its reason is on standard error); stopping');
    pool.stop();
    await stopWorkers([...workers.keys()], config.shutdownTimeoutMs, log);
    await writer?.services.stop();
    await store.close().catch(() => {});
    await replication?.stop();
    return 1;
  }
  let offer: HandoverOffer | undefined;
  let handover: Handover | undefined;
  let removePidFile = () => {};
  const stopReloading = reloadOnHangup(log, succession.impossible, () => handover !== undefined);
  if ('port' in outcome) {
    pool.serveOn(outcome.port);
    // The start line comes last: once it is out, the first token (if one was made) has been printed.
    await bootstrapToken(config, store, tokens, publicUrl(config.host, outcome.port), log);
    announce(config, log, outcome.port, count);
    if (config.pidFile) removePidFile = writePidFile(config.pidFile);
    offer = await takeOverThenOffer(succession, config.shutdownTimeoutMs, log);
    if (afterHandover) {
      replication = await startReplicating();
      if (writer) replication?.register(writer.metrics.registry);
      writer?.services.start();
      // Readers that resumed on the workers wait for what the previous server committed while it finished.
      broadcast(workers);
    }
  }
  // PostgreSQL: the workers are whole instances; this process only watches them.
  if (!sharedWriter) await store.close();
  const stopCollecting = keepHeapSmall(config.heapHeadroomMb * MIB);

  const told = await Promise.race([stop.received.then((signal) => ({ signal })), ...(offer ? [offer.requested.then((h) => ({ handover: h }))] : [])]);
  stopCollecting();
  pool.stop();
  offer?.close();
  if ('handover' in told) {
    handover = told.handover;
    log.info({ to: handover.by, workers: workers.size }, 'handing over to the new server: every worker finishes its in-flight requests');
    await stopWorkers([...workers.keys()], config.shutdownTimeoutMs, log, (w) => workers.get(w)?.notify('handOver'));
  } else {
    log.info({ signal: told.signal, workers: workers.size }, 'shutting down: every worker finishes its in-flight requests');
    // The workers drain while this process still commits for them.
    await stopWorkers([...workers.keys()], config.shutdownTimeoutMs, log);
  }
  let code = 0;
  try {
    await writer?.services.stop();
    if (sharedWriter) await store.close();
  } catch (err) {
    log.error({ err }, 'error while closing the store');
    code = 1;
  }
  // After the store: Litestream sends the last commits before it exits.
  await replication?.stop();
  stopReloading();
  removePidFile();
  log.info(handover ? 'handed over' : 'stopped');
  handover?.done(code);
  return code;
}

/**
 * The shared writer's background services (sequencing, retention, deliveries), for the caller to start, and the metrics of
 * what they and the commits report; no HTTP app. `tellWorkers` is told when events got their feed positions.
 */
function startWriter(config: Config, store: Store, log: Logger, tellWorkers: () => void): { services: BackgroundServices; metrics: Metrics } {
  const observers = createObservers();
  observers.subscribe(observationLog(log));
  const metrics = createMetrics({ store, logger: log.child({ component: 'metrics' }) });
  observers.subscribe(metrics.observe);
  const services = createBackground({ config, store, observers, onPlaced: tellWorkers });
  return { services, metrics };
}

/**
 * Every worker's metrics and this process's, added up (prom-client's cluster aggregation). A worker that does not
 * answer in time (COLLECT_TIMEOUT_MS) is left out; a replaced worker's counts start afresh, as after any restart.
 */
function gatherMetrics(workers: Map<Worker, Channel<WorkerMethods>>, own: Metrics | undefined): () => Promise<string> {
  return async () => {
    const parts = (await Promise.all([...workers.values()].map((w) => w.request('collect')))).filter((m) => m !== null);
    if (own) parts.push(await own.json());
    return AggregatorRegistry.aggregate(parts).metrics();
  };
}

/** What the primary answers each worker; `writer` only where it commits for them. */
function answerWorkers(parts: { store: Store; writer: BackgroundServices | undefined; metrics: () => Promise<string>; limits: ReturnType<typeof createLimitKeeper>; log: Logger }): WorkerHandlers {
  const { store, writer, metrics, limits, log } = parts;
  return {
    // Any write, run by this process's writer (workers send them only to a shared writer, which serves them);
    // the reply goes back as the writer made it.
    commit: (command) =>
      store.serveWrite!(command).then(({ reply, wroteEvents }) => {
        // Their events get positions and deliveries here, off the worker's request path.
        if (wroteEvents) writer?.links.eventsCommitted();
        return reply;
      }),
    wakeDispatcher: () => writer?.links.deliveriesDue(),
    scrape: () =>
      metrics().catch((err: unknown) => {
        log.warn({ err }, 'could not gather the metrics of the workers');
        throw err;
      }),
    countFailure: (key) => limits.countFailure(key),
    addHits: (hits) => limits.addHits(hits),
  };
}

/** What the primary answers every worker alike (each worker's own `listening` is the pool's). */
type WorkerHandlers = Omit<Handlers<PrimaryMethods>, 'listening'>;

interface WorkerPool {
  /** Forks a worker in a slot of its own (each slot backs off on its own when its workers die young). */
  fork(): void;
  /** Start-up is over: a worker that dies now is replaced, listening on `port`. */
  serveOn(port: number): void;
  /** No more replacements: a shutdown (or a failed start-up) is under way. */
  stop(): void;
  /** Workers fork on this port from now on (PORT=0: the one the first worker got). */
  listenOn(port: number): void;
  /** `listener` hears each worker that listens (each has a SO_REUSEPORT socket of its own, unseen by cluster). */
  onListening(listener: (w: Worker, port: number) => void): () => void;
}

/**
 * The workers, each replaced when it dies while the server runs, with a back-off per slot for a crash loop.
 * `stopping` says a stop signal came, after which none is replaced.
 */
function workerPool(workers: Map<Worker, Channel<WorkerMethods>>, log: Logger, handlers: WorkerHandlers, stopping: () => boolean): WorkerPool {
  // v8 serialization: bigint ids and versions cross as they are.
  cluster.setupPrimary({ serialization: 'advanced' });
  const restarts = new Set<NodeJS.Timeout>();
  // Listening workers: while none is, every request is refused.
  const serving = new Set<Worker>();
  const listeners = new Set<(w: Worker, port: number) => void>();
  let listening = false;
  let stopped = false;
  // Replacements listen on the port the first workers got: with PORT=0, a replacement started after every worker
  // died would otherwise get another one.
  let forkEnv: Record<string, string> | undefined;
  const ended = () => stopped || stopping();
  const fork = (slot = { quickDeaths: 0 }) => {
    const w = cluster.fork(forkEnv);
    const started = Date.now();
    const own: Handlers<PrimaryMethods> = {
      ...handlers,
      listening: (port) => {
        serving.add(w);
        for (const listener of listeners) listener(w, port);
      },
    };
    // A worker that cannot answer a metrics collection in time is left out of it.
    workers.set(w, createChannel<WorkerMethods, PrimaryMethods>(ipcCarrier(w.process), { handlers: own, calls: { collect: { timeoutMs: COLLECT_TIMEOUT_MS, fallback: () => null } } }));
    log.info({ worker: w.id, pid: w.process.pid }, 'worker started');
    // Unhandled, an error on the channel to one worker would end the primary and with it every worker.
    w.on('error', (err) => log.warn({ worker: w.id, error: err.message }, 'the channel to a worker failed'));
    w.once('exit', (code, signal) => {
      workers.delete(w);
      const served = serving.delete(w);
      if (ended() || !listening) return;
      slot.quickDeaths = Date.now() - started < QUICK_DEATH_MS ? slot.quickDeaths + 1 : 0;
      // With no worker serving, the replacement starts at once: waiting would only refuse requests longer. Not so
      // for a worker that failed on its own before it listened (a start-up that fails every time must not loop).
      const startFailed = !served && signal === null;
      const backOff = serving.size > 0 || startFailed;
      const delay = !backOff || slot.quickDeaths === 0 ? 0 : Math.min(MAX_RESTART_DELAY_MS, 250 * 2 ** slot.quickDeaths);
      log.error({ pid: w.process.pid, code, signal, restartInMs: delay }, 'a worker exited; starting another');
      // Referenced: with every worker gone, this timer is what keeps the primary (and the service) alive.
      const restart = setTimeout(() => {
        restarts.delete(restart);
        if (!ended()) fork(slot);
      }, delay);
      restarts.add(restart);
    });
  };
  return {
    fork: () => fork(),
    listenOn(port) {
      forkEnv = { PORT: String(port) };
    },
    serveOn(port) {
      listening = true;
      forkEnv = { PORT: String(port) };
    },
    stop() {
      stopped = true;
      for (const restart of restarts) clearTimeout(restart);
    },
    onListening(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

/**
 * Start-up: every worker listening, or the first one that could not (its error is on stderr) stops it all.
 * With PORT=0 the first worker takes a free port and the others join it there.
 */
function startWorkers(pool: WorkerPool, count: number, port: number): Promise<{ port: number } | { failed: string }> {
  return new Promise((resolve) => {
    let ready = 0;
    const stopListening = pool.onListening((_w, at) => {
      if (++ready === 1 && port === 0) {
        pool.listenOn(at);
        for (let i = 1; i < count; i++) pool.fork();
      }
      if (ready < count) return;
      cleanup();
      resolve({ port: at });
    });
    const onExit = (_w: Worker, code: number | null, signal: string | null) => {
      cleanup();
      resolve({ failed: signal ?? `exit code ${code}` });
    };
    const cleanup = () => {
      stopListening();
      cluster.off('exit', onExit);
    };
    cluster.on('exit', onExit);
    for (let i = 0; i < (port === 0 ? 1 : count); i++) pool.fork();
  });
}

/** Events were placed: tells every worker. */
function broadcast(workers: Map<Worker, Channel<WorkerMethods>>): void {
  for (const w of workers.values()) w.notify('placed');
}

/** Each worker opens its own pool: say so when they could ask the database for more connections than it allows. */
async function warnAboutConnections(store: Store, workers: number, poolSize: number, log: Logger): Promise<void> {
  const limit = await store.connectionLimit?.().catch(() => undefined);
  if (limit === undefined || workers * poolSize <= limit) return;
  log.warn(
    { workers, poolSize, connections: workers * poolSize, databaseLimit: limit },
    'WORKERS x DATABASE_POOL_SIZE is more connections than the database allows (max_connections less the superuser reserve): under load some requests will get 503; lower WORKERS or DATABASE_POOL_SIZE, or raise max_connections',
  );
}

/**
 * Tells every worker to stop (SIGTERM: each drains as it would alone; or `tell`, a handover), then waits for
 * them; SIGKILL past the timeout.
 */
async function stopWorkers(all: Worker[], timeoutMs: number, log: Logger, tell: (w: Worker) => void = (w) => w.process.kill('SIGTERM')): Promise<void> {
  const exited = all.map((w) => (w.isDead() ? Promise.resolve() : new Promise<void>((resolve) => w.once('exit', () => resolve()))));
  for (const w of all) if (!w.isDead()) tell(w);
  // The workers' own shutdown timeout bounds their drain; this one only catches a worker that hangs anyway.
  const force = setTimeout(() => {
    log.error({ timeoutMs }, 'workers did not stop in time; killing them');
    for (const w of all) if (!w.isDead()) w.process.kill('SIGKILL');
  }, timeoutMs + 5_000);
  force.unref();
  await Promise.all(exited);
  clearTimeout(force);
}
