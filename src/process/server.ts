// Process entry for `plant-store serve`: config, logger, store, listen, workers, graceful shutdown. Nothing else.
import cluster from 'node:cluster';
import type { Server } from 'node:http';
import { Server as NetServer, type AddressInfo, type Socket } from 'node:net';
import { availableParallelism } from 'node:os';
import type { FastifyListenOptions } from 'fastify';
import type { Logger } from 'pino';
import { buildApp } from '../app.js';
import { ConfigError, type Config } from '../config.js';
import { AppError } from '../errors/catalogue.js';
import { createLogger } from '../observations/logger.js';
import { createTokenService } from '../auth/token-service.js';
import { createBackground, createWorkerBackground, type Background } from './background.js';
import { createObservers, observationLog } from '../observations/observations.js';
import { processSharing } from '../storage/open-store.js';
import { startTracing, stopTracing } from '../tracing/tracing-switch.js';
import { announce, bootstrapToken, publicUrl, openServiceStore, startReplication, stopSignals, type StopSignals } from './startup.js';
import type { AnswersOwed } from '../http/in-order.js';
import { runPrimary } from './primary.js';
import { createWorkerLink, type WorkerLink } from './worker-link.js';
import { keepHeapSmall, MIB } from './idle-memory.js';
import { findSuccession, takeOverThenOffer, writePidFile, type Handover, type HandoverOffer, type Succession } from './takeover.js';
import { reloadOnHangup } from './reload.js';

/** How long a shutdown keeps idle keep-alive connections open for requests already on their way. */
const DRAIN_IDLE_GRACE_MS = 500;
/** Past the keep-alive timeout, Node.js closes an idle connection on its next timer check. */
const KEEP_ALIVE_SLACK_MS = 500;

export async function serve(config: Config): Promise<number> {
  // Before the logger (whose lines then name their trace) and everything that makes spans.
  await startTracing(config);
  try {
    return await serveTraced(config);
  } finally {
    await stopTracing();
  }
}

async function serveTraced(config: Config): Promise<number> {
  const logger = createLogger(config);
  if (cluster.isWorker) {
    // Heeded from the start: the signal to the process group can reach a worker that is still starting, whose
    // default action would end it with its lines unwritten (and the primary would call it a failed start).
    const signals = stopSignals();
    try {
      return await serveHttp(config, logger.child({ worker: cluster.worker!.id }), signals, createWorkerLink());
    } finally {
      // The channel to the primary would keep this process alive. The worker's own disconnect lets it exit with
      // its exit code; the bare channel's (process.disconnect) makes Node's cluster exit 0, even after a failed start.
      if (process.connected) cluster.worker!.disconnect();
    }
  }
  // A server with these settings running already is taken over from once this one is ready (takeover.ts).
  // Otherwise, before the store is opened or a worker forked: a port in use is said once, by this process, and
  // nothing else is done.
  const succession = await findSuccession(config, logger);
  if (succession.running) logger.info({ pid: succession.running.pid, version: succession.running.version }, 'a server with these settings is running: this one takes over from it once ready');
  else await checkAddress(config);
  const workers = workerCount(config);
  if (workers > 1) return runPrimary(config, logger, workers, succession);
  return serveHttp(config, logger, undefined, undefined, succession);
}

/**
 * Binds PORT on HOST and lets it go: an address that cannot be listened on is one clear line (ConfigError, which
 * the command prints as it is) before anything else starts. PORT=0 takes any free port, so there is nothing to check.
 */
async function checkAddress(config: Config): Promise<void> {
  if (config.port === 0) return;
  const probe = new NetServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    probe.listen({ port: config.port, host: config.host }, () => probe.close(() => resolve()));
  }).catch((err: unknown) => {
    throw listenFailure(err, config);
  });
}

/** Why the service cannot listen, naming the settings to change. */
function listenFailure(err: unknown, config: Config): Error {
  const code = (err as { code?: string }).code;
  const host = config.host.includes(':') && !config.host.startsWith('[') ? `[${config.host}]` : config.host;
  const failed = `Cannot listen on PORT=${config.port} HOST=${config.host}:`;
  // The error code before the address, as the operating system's own message has them.
  const address = `(${code ?? 'error'} ${host}:${config.port})`;
  switch (code) {
    case 'EADDRINUSE':
      return new ConfigError(`${failed} the address is already in use ${address}. Stop the process that listens there, or set PORT to a free port.`);
    case 'EACCES':
      return new ConfigError(`${failed} permission denied ${address}. A port below 1024 needs privileges: set PORT to 1024 or above.`);
    case 'EADDRNOTAVAIL':
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return new ConfigError(`${failed} HOST is not an address of this machine ${address}. Set HOST to one of its addresses, or 0.0.0.0 for every IPv4 interface.`);
    default:
      return new ConfigError(`${failed} ${String((err as Error).message).replace(/\.$/, '')}.`);
  }
}

/** WORKERS, or one per available core; one where the database cannot be shared between processes. */
function workerCount(config: Config): number {
  if (processSharing(config.databaseUrl) === 'one-process') return 1;
  return config.workers === 0 ? availableParallelism() : config.workers;
}

/**
 * Serves HTTP from this process until a signal and a graceful drain, or a handover to a server that takes over.
 * Alone, it owns everything; as a worker (`link`), the primary made the first token and announces the server,
 * and on a shared-writer engine commits for it and runs the passes and the deliveries.
 */
async function serveHttp(config: Config, logger: Logger, early?: StopSignals, link?: WorkerLink, succession: Succession = {}): Promise<number> {
  const sharing = processSharing(config.databaseUrl);
  const sharedWriter = link && sharing === 'shared-writer' ? link.writer : undefined;
  // Taking over a SQLite file: one process at a time runs the passes, deliveries and Litestream; this one's
  // start once the running one is done. Instances of a database server run them side by side anyway.
  const afterHandover = succession.running !== undefined && sharing === 'shared-writer';
  const store = await openServiceStore(config, logger, { sharedWriter, reseal: !link });
  const startReplicating = () =>
    startReplication(config, logger).catch(async (err: unknown) => {
      await store.close();
      throw err;
    });
  let replication = link || afterHandover ? undefined : await startReplicating();
  const tokens = createTokenService(store, { cacheTtlMs: config.tokenCacheTtlMs });
  const observers = createObservers();
  observers.subscribe(observationLog(logger));
  const background: Background = sharedWriter
    ? createWorkerBackground({ store, observe: observers.observe, tokens, deliveriesDue: () => link!.deliveriesDue() })
    : createBackground({ config, store, observers, tokens });
  const app = await buildApp(config, {
    store,
    logger,
    tokens,
    services: background.links,
    observers,
    ...(link ? { scrapeMetrics: () => link.scrape().catch(() => Promise.reject(new AppError('METRICS_UNAVAILABLE'))) } : {}),
    ...(link ? { sharedLimits: { channel: link.limits, workers: workerCount(config) } } : {}),
    workers: link ? workerCount(config) : 1,
  });
  link?.collectWith(() => app.metrics.json());
  replication?.register(app.metrics.registry);

  const connections = trackConnections(app.server, app.answersOwed);
  // Alone, heeded from here: a signal before the server listens ends the process, with nothing to drain.
  const signals = early ?? stopSignals();
  // Listening comes first: a port already in use stops start-up before a first token is made and shown.
  // SO_REUSEPORT: a server that takes over from this one listens beside it (a port held by any other process
  // was refused before: checkAddress).
  // Fastify passes the option on to Node.js (22.12 and later), though its types do not list it yet.
  const listenOn: FastifyListenOptions & { reusePort: boolean } = { port: config.port, host: config.host, reusePort: true };
  try {
    await app.listen(listenOn);
  } catch (err) {
    await app.close().catch(() => {});
    await store.close();
    await replication?.stop();
    throw listenFailure(err, config);
  }
  const port = (app.server.address() as AddressInfo).port;
  link?.listening(port);
  // Deliveries left over from before a restart start now; they stop before the store is closed.
  if (!afterHandover) background.start();
  const stopCollecting = keepHeapSmall(config.heapHeadroomMb * MIB);
  let offer: HandoverOffer | undefined;
  let handover: Handover | undefined;
  let removePidFile = () => {};
  const stopReloading = link ? ignoreHangup() : reloadOnHangup(logger, succession.impossible, () => handover !== undefined);
  if (!link) {
    // The start line comes last: once it is out, the first token (if one was made) has been printed.
    await bootstrapToken(config, store, tokens, publicUrl(config.host, port), logger);
    announce(config, logger, port, 1);
    if (config.pidFile) removePidFile = writePidFile(config.pidFile);
    offer = await takeOverThenOffer(succession, config.shutdownTimeoutMs, logger);
    if (afterHandover) {
      replication = await startReplicating();
      replication?.register(app.metrics.registry);
      background.start();
      // Readers that resumed here wait for what the previous server committed while it finished.
      background.links.feed.placed();
    }
  }
  const told = await Promise.race([
    signals.received.then((signal) => ({ signal })),
    ...(offer ? [offer.requested.then((h) => ({ handover: h }))] : []),
    ...(link ? [link.handOverAsked.then(() => ({ handover: undefined }))] : []),
  ]);
  stopCollecting();
  offer?.close();
  // New connections go elsewhere at once (refused, or to the new server), before any answer tells a client to
  // reconnect: a connection still waiting in this socket's queue when it closes would be reset.
  NetServer.prototype.close.call(app.server);
  const handingOver = 'handover' in told;
  if (handingOver) {
    handover = told.handover;
    if (!link) logger.info({ to: handover?.by }, 'handing over to the new server: finishing in-flight requests');
    // Requests still arriving on open connections are served, each closing its connection.
    app.handOver();
  } else {
    logger.info({ signal: told.signal }, 'shutting down: finishing in-flight requests');
    // Every request that reaches the server from now on is answered 503 with Connection: close.
    app.drain();
  }
  // A repeated signal changes nothing (the shutdown timeout already bounds the wait). Said once, and not by a
  // worker, which gets every signal to the process group twice.
  let toldAgain = false;
  signals.onRepeat((signal) => {
    if (!link && !toldAgain) logger.info({ signal }, 'already shutting down; waiting for in-flight requests');
    toldAgain = true;
  });
  // In-flight requests finish, but their connections must not wait idle for the keep-alive timeout
  // (which held the exit back by up to KEEP_ALIVE_TIMEOUT_MS) nor be reused by the client.
  connections.closeAfterResponses();
  const force = setTimeout(() => {
    logger.error({ timeoutMs: config.shutdownTimeoutMs }, 'shutdown timed out; closing connections');
    app.server.closeAllConnections();
  }, config.shutdownTimeoutMs);
  force.unref();
  // Idle keep-alive connections stay open a moment: a client may have written its next request on one already,
  // and closing under it would reset that request unanswered. Each such request gets the 503 (or, handing over,
  // its answer); connections still idle after the grace are closed by app.close(), after one more turn of the
  // event loop so that a request already received is read first.
  // Handing over, an idle connection is closed no sooner than the keep-alive timeout it was promised
  // (`Keep-Alive: timeout=`), which clients heed by letting it go a little before: closing one earlier would race a
  // client sending on it. Most are gone much sooner, each closed by the answer to its next request.
  if (handingOver) await connections.allGone(Math.min(config.keepAliveTimeoutMs + KEEP_ALIVE_SLACK_MS, config.shutdownTimeoutMs));
  else await connections.idleGone(Math.min(DRAIN_IDLE_GRACE_MS, config.shutdownTimeoutMs / 2));
  await new Promise((resolve) => setImmediate(resolve));
  let code = 0;
  try {
    await app.close();
  } catch (err) {
    logger.error({ err }, 'error while closing the server');
    code = 1;
  }
  await background.stop();
  try {
    // Commits anything still queued before the database is released.
    await store.close();
  } catch (err) {
    logger.error({ err }, 'error while closing the store');
    code = 1;
  }
  // After the store: Litestream sends the last commits before it exits.
  await replication?.stop();
  clearTimeout(force);
  stopReloading();
  removePidFile();
  logger.info(handingOver ? 'handed over' : 'stopped');
  handover?.done(code);
  return code;
}

/** A worker leaves SIGHUP to its primary, which reloads; the default action would end it. */
function ignoreHangup(): () => void {
  const ignore = () => {};
  process.on('SIGHUP', ignore);
  return () => process.off('SIGHUP', ignore);
}

/**
 * The open connections, so that a shutdown can end each after its in-flight requests: the last answer a
 * connection owes says `Connection: close`, so the client neither reuses the connection nor keeps it open, and
 * Node closes it once the answer is written. (Requests that arrive later on a connection get the app's 503,
 * which closes it too.) What each connection owes is kept by the in-order answering (http/in-order.ts), which
 * already follows every answer: a second set of listeners per response cost a GET by id about 2% of its CPU.
 */
function trackConnections(server: Server, owed: AnswersOwed) {
  const open = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  });
  return {
    closeAfterResponses() {
      for (const socket of open) {
        // Only the last one: requests pipelined behind it on the same connection still get their answers.
        const last = owed.last(socket);
        if (last && !last.headersSent) last.setHeader('connection', 'close');
      }
    },
    /**
     * Resolves once every connection is gone, or after `ms`: each busy one closes after its answer, each idle one
     * after the answer to its next request or when its client lets it go. A connection idle for a moment between
     * two requests is not done with: closing it then would reset the request its client is sending.
     */
    async allGone(ms: number): Promise<void> {
      const deadline = Date.now() + ms;
      while (open.size > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    },
    /** Resolves once every open connection has a request in progress or is gone, or after `ms`. */
    async idleGone(ms: number): Promise<void> {
      const deadline = Date.now() + ms;
      const idle = () => [...open].some((socket) => !owed.busy(socket));
      while (idle() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    },
  };
}
