// The primary process of a multi-process server (WORKERS > 1): it opens and migrates the store, forks the HTTP
// workers that share the port, replaces a worker that dies, adds up their metrics for GET /metrics, keeps the
// counts of the rate limits for all of them (on either engine), and on SIGTERM lets every worker drain before
// it closes. On a shared-writer engine (a SQLite file) it is also the
// one writer: workers send their plant writes here to join one group commit (one fsync for all of them), and it
// runs the event sequencer and the webhook dispatcher, so each event is delivered once; a database server
// (PostgreSQL) needs none of that, and each worker is a whole instance, as several machines would be.
import cluster, { type Worker } from 'node:cluster';
import { AggregatorRegistry } from 'prom-client';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { buildApp } from '../app.js';
import type { Config } from '../config.js';
import { createTokenService } from '../auth/token-service.js';
import { processSharing } from '../storage/open-store.js';
import { decodeItems } from '../storage/writer-wire.js';
import type { Store } from '../storage/store.js';
import { announce, bootstrapToken, openServiceStore } from '../startup.js';
import { createLimitKeeper } from '../limits/shared-limits.js';
import { isMessage, type MetricsJson, type PrimaryMessage, type WorkerMessage } from './messages.js';

/** How long a metrics collection waits for each worker's answer. */
const COLLECT_TIMEOUT_MS = 3_000;
/**
 * A worker that dies within this long of its start counts as a crash loop: the next start in its slot waits
 * longer, while another worker serves.
 */
const QUICK_DEATH_MS = 5_000;
const MAX_RESTART_DELAY_MS = 10_000;

export async function runPrimary(config: Config, logger: Logger, count: number): Promise<number> {
  const log = logger.child({ role: 'primary' });
  // From the start, so that a signal during start-up stops the server once it is up, rather than killing this
  // process under its workers. Kept to the end: a repeated signal (Ctrl-C under npm) must not kill it mid-shutdown.
  let stopSignal: NodeJS.Signals | undefined;
  let onStopSignal: (() => void) | undefined;
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopSignal) return;
    stopSignal = signal;
    stopping = true;
    onStopSignal?.();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  const sharedWriter = processSharing(config.databaseUrl) === 'shared-writer';
  // The primary of a shared writer does little but commit: on its own thread, a commit skips two thread hops
  // (2 workers, POST c=256 on 2 cores: 11.0-11.8k against 8.7-9.2k req/s), and the fsync that blocks its event
  // loop delays only what waits for commits anyway (workers' batches, which then join the next one), passes,
  // deliveries and the hand-out of new connections.
  const store = await openServiceStore(config, log, { commitOnThisThread: sharedWriter });
  const tokens = createTokenService(store, { cacheTtlMs: config.tokenCacheTtlMs });
  // Before the workers open their pools, so the warning comes ahead of the start line.
  if (!sharedWriter) await warnAboutConnections(store, count, config.databasePoolSize, log);
  const workers = new Set<Worker>();
  const broadcast = (msg: PrimaryMessage) => {
    for (const w of workers) send(w, msg);
  };
  // The writer's half of the service: sequencing, deliveries, retention, and the commit metrics. Never listens.
  let app: FastifyInstance | undefined;
  if (sharedWriter) {
    app = await buildApp(config, { store, logger: log, tokens, onEventsPlaced: () => broadcast({ plantStore: 'placed' }) });
    await app.ready();
  }

  // The failure throttle and the per-token rate limit, counted here for every worker.
  const limits = createLimitKeeper(config);
  const collections = new Map<number, (metrics: MetricsJson | null) => void>();
  let seq = 0;
  const collect = (w: Worker): Promise<MetricsJson | null> =>
    new Promise((resolve) => {
      const id = ++seq;
      const timer = setTimeout(() => done(null), COLLECT_TIMEOUT_MS);
      const done = (metrics: MetricsJson | null) => {
        clearTimeout(timer);
        collections.delete(id);
        resolve(metrics);
      };
      collections.set(id, done);
      if (!send(w, { plantStore: 'collect', id })) done(null);
    });
  /**
   * Every worker's metrics and this process's, added up (prom-client's cluster aggregation). A worker that does
   * not answer in time is left out; a replaced worker's counts start afresh, as after any restart.
   */
  const scrape = async (): Promise<string> => {
    const parts = (await Promise.all([...workers].map(collect))).filter((m): m is MetricsJson => m !== null);
    if (app) parts.push(await app.metrics.json());
    return AggregatorRegistry.aggregate(parts).metrics();
  };

  const onMessage = (w: Worker, msg: unknown) => {
    if (!isMessage<WorkerMessage>(msg)) return;
    switch (msg.plantStore) {
      case 'commit':
        store.commitWrites(decodeItems(msg.items)).then(
          (results) => {
            send(w, { plantStore: 'committed', id: msg.id, results });
            // Their events get positions and deliveries here, off the worker's request path.
            if (results.some((r) => r.wrote)) app?.events.wake();
          },
          (err: unknown) => send(w, { plantStore: 'commit-failed', id: msg.id, message: (err as Error).message, code: (err as { code?: string }).code }),
        );
        return;
      case 'wake-dispatcher':
        app?.dispatcher.wake();
        return;
      case 'scrape':
        scrape().then(
          (text) => send(w, { plantStore: 'scraped', id: msg.id, text }),
          (err: unknown) => {
            log.warn({ err }, 'could not gather the metrics of the workers');
            send(w, { plantStore: 'scraped', id: msg.id, text: null });
          },
        );
        return;
      case 'collected':
        collections.get(msg.id)?.(msg.metrics);
        return;
      case 'auth-failure':
        send(w, { plantStore: 'auth-failure-counted', id: msg.id, counted: limits.countFailure(msg.key) });
        return;
      case 'token-hits':
        send(w, { plantStore: 'token-counts', id: msg.id, counts: limits.addHits(msg.hits) });
        return;
    }
  };

  // v8 serialization: bigint ids and versions cross as they are.
  cluster.setupPrimary({ serialization: 'advanced' });
  const restarts = new Set<NodeJS.Timeout>();
  // Listening workers: while none is, every request is refused.
  const serving = new Set<Worker>();
  // Replacements listen on the port the first workers got: with PORT=0, a replacement started after every worker
  // died would otherwise get another one (the primary lets the port go with the last worker).
  let forkEnv: Record<string, string> | undefined;
  // Each of the WORKERS places has its own back-off: one worker's deaths do not delay another's replacement.
  const fork = (slot = { quickDeaths: 0 }) => {
    const w = cluster.fork(forkEnv);
    const started = Date.now();
    workers.add(w);
    w.once('listening', () => serving.add(w));
    log.info({ worker: w.id, pid: w.process.pid }, 'worker started');
    w.on('message', (msg: unknown) => onMessage(w, msg));
    // Unhandled, an error on the channel to one worker would end the primary and with it every worker.
    w.on('error', (err) => log.warn({ worker: w.id, error: err.message }, 'the channel to a worker failed'));
    w.once('exit', (code, signal) => {
      workers.delete(w);
      const served = serving.delete(w);
      if (stopping || !listening) return;
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
        if (!stopping) fork(slot);
      }, delay);
      restarts.add(restart);
    });
    return w;
  };

  // Start-up: every worker listening, or the first one that could not (its error is on stderr) stops it all.
  let listening = false;
  const outcome = await new Promise<{ port: number } | { failed: string }>((resolve) => {
    let ready = 0;
    const onListening = (_w: Worker, address: { port: number }) => {
      if (++ready < count) return;
      cleanup();
      resolve({ port: address.port });
    };
    const onExit = (_w: Worker, code: number | null, signal: string | null) => {
      cleanup();
      resolve({ failed: signal ?? `exit code ${code}` });
    };
    const cleanup = () => {
      cluster.off('listening', onListening);
      cluster.off('exit', onExit);
    };
    cluster.on('listening', onListening);
    cluster.on('exit', onExit);
    for (let i = 0; i < count; i++) fork();
  });
  if ('failed' in outcome) {
    log.error({ exit: outcome.failed }, 'a worker could not start (its reason is on standard error); stopping');
    stopping = true;
    await stopWorkers(workers, config.shutdownTimeoutMs, log);
    await app?.close().catch(() => {});
    await store.close().catch(() => {});
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    return 1;
  }
  listening = true;
  forkEnv = { PORT: String(outcome.port) };
  const url = announce(config, log, outcome.port, count);
  await bootstrapToken(config, store, tokens, url, log);
  // PostgreSQL: the workers are whole instances; this process only watches them.
  if (!sharedWriter) await store.close();

  if (!stopSignal) await new Promise<void>((resolve) => (onStopSignal = resolve));
  for (const restart of restarts) clearTimeout(restart);
  log.info({ signal: stopSignal, workers: workers.size }, 'shutting down: every worker finishes its in-flight requests');
  // The workers drain while this process still commits for them.
  await stopWorkers(workers, config.shutdownTimeoutMs, log);
  let code = 0;
  try {
    await app?.close();
    if (sharedWriter) await store.close();
  } catch (err) {
    log.error({ err }, 'error while closing the store');
    code = 1;
  }
  log.info('stopped');
  process.off('SIGTERM', onSignal);
  process.off('SIGINT', onSignal);
  return code;
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

/** SIGTERM to every worker (each drains as it would alone), then waits for them; SIGKILL past the timeout. */
async function stopWorkers(workers: Set<Worker>, timeoutMs: number, log: Logger): Promise<void> {
  const all = [...workers];
  const exited = all.map((w) => (w.isDead() ? Promise.resolve() : new Promise<void>((resolve) => w.once('exit', () => resolve()))));
  for (const w of all) if (!w.isDead()) w.process.kill('SIGTERM');
  // The workers' own shutdown timeout bounds their drain; this one only catches a worker that hangs anyway.
  const force = setTimeout(() => {
    log.error({ timeoutMs }, 'workers did not stop in time; killing them');
    for (const w of all) if (!w.isDead()) w.process.kill('SIGKILL');
  }, timeoutMs + 5_000);
  force.unref();
  await Promise.all(exited);
  clearTimeout(force);
}

/** False only when the message cannot go (the worker is gone); send()'s own false means queued, and it still goes. */
function send(w: Worker, msg: PrimaryMessage): boolean {
  if (!w.isConnected()) return false;
  try {
    // With a callback, a channel that closes before the write (EPIPE: the worker is exiting) is reported to it;
    // without one, Node emits it as an 'error' that would end the primary.
    w.send(msg, ignoreGone);
    return true;
  } catch {
    return false;
  }
}

/** A worker gone before a message reached it: its 'exit' handler replaces it or the shutdown is under way. */
function ignoreGone(): void {}
