// The services no request runs: the event sequencer (feed positions and deliveries, and retention), the webhook
// dispatcher and the token last-used flush, built from config, store, observers and clock, and started and stopped
// by the process that runs them: server.ts alone or as a worker, process/primary.ts as a shared writer. buildApp
// never builds them; it gets their `links`: what its handlers tell them, and where waiting feed readers listen.
import type { TokenService } from '../auth/token-service.js';
import type { Clock } from '../kit/clock.js';
import type { Config } from '../config.js';
import { createFeedNotifier, type FeedNotifier } from '../events/feed-notifier.js';
import { createSequencer, type Sequencer } from '../events/sequencer.js';
import type { Observer, Observers } from '../observations/observations.js';
import type { Store } from '../storage/store.js';
import type { ServiceLinks } from '../app.js';
import { createDispatcher, type Dispatcher, type DispatcherOptions } from '../webhooks/dispatcher.js';

/** How often token last-used times are written. */
const TOKEN_FLUSH_MS = 30_000;

export interface Background {
  readonly links: ServiceLinks;
  /** Starts every service: passes and deliveries, including those left over from before a restart. */
  start(): void;
  /** Stops them (waiting for the pass and the sends in flight), writes token use, and releases feed readers. */
  stop(): Promise<void>;
}

/** The services of a process that runs the event log's passes and sends the deliveries. */
export interface BackgroundServices extends Background {
  readonly sequencer: Sequencer;
  readonly dispatcher: Dispatcher;
}

export interface BackgroundOptions {
  config: Config;
  store: Store;
  /** The retention and delivery clock (tests move it). */
  clock?: Clock;
  /** Where the services report (observations.ts), the log included; this process's commits are reported there too. */
  observers: Observers;
  /** Whose last-used times to write in the background: the process that serves requests. */
  tokens?: TokenService;
  /** Also told when this process's passes placed events (a shared writer's primary tells its workers). */
  onPlaced?: () => void;
  /** Settings over the config's (tests: a fake sender, a shorter poll). */
  dispatcher?: Partial<Omit<DispatcherOptions, 'store'>>;
  /** false: deliveries are sent only when the caller runs `dispatcher.runOnce()` (tests with a fake clock). */
  startDispatcher?: boolean;
}

/** Alone, as a PostgreSQL worker, or as a shared writer's primary: every background service runs here. */
export function createBackground(options: BackgroundOptions): BackgroundServices {
  const { config, store, clock, observers } = options;
  const feed = createFeedNotifier();
  // The wiring below is control flow (who wakes whom), not observation: each wake is part of the work.
  const sequencer: Sequencer = createSequencer({
    store: store.events,
    clock,
    observe: observers.observe,
    retentionMs: config.eventRetentionMs,
    onDeliveries: () => dispatcher.wake(),
    onPlaced: () => {
      feed.placed();
      options.onPlaced?.();
    },
  });
  const dispatcher: Dispatcher = createDispatcher({
    store: store.webhooks,
    timeoutMs: config.webhookTimeoutMs,
    allowedHosts: config.webhookAllowedHosts,
    concurrency: config.webhookConcurrency,
    clock,
    observe: observers.observe,
    // A settled delivery makes room for its subscription's next ones.
    onSettled: () => sequencer.wake(),
    prepare: () => sequencer.runOnce(),
    ...options.dispatcher,
  });
  const flush = options.tokens && tokenFlush(options.tokens, observers.observe);
  let stopWatching = () => {};
  let stopReporting = () => {};
  return {
    links: { eventsCommitted: () => sequencer.wake(), deliveriesDue: () => dispatcher.wake(), feed },
    sequencer,
    dispatcher,
    start() {
      stopReporting = store.observe(observers.observe);
      // Another instance's pass (PostgreSQL) placed events, and may have made deliveries this one can send.
      stopWatching = store.events.watch(() => {
        feed.placed();
        dispatcher.wake();
      });
      sequencer.start();
      if (options.startDispatcher !== false) dispatcher.start();
      flush?.start();
    },
    async stop() {
      feed.release();
      stopWatching();
      await sequencer.stop();
      await dispatcher.stop();
      stopReporting();
      await flush?.stop();
    },
  };
}

/**
 * A worker of a shared writer (WORKERS > 1 on SQLite): the primary runs the passes and the deliveries. Its feed
 * readers hear of placed events from the primary (the store's watch), a commit needs no wake (the primary wakes
 * its sequencer when it commits), and a retry asked here is forwarded once; nothing answers a 'placed'.
 */
export function createWorkerBackground(options: { store: Store; observe: Observer; tokens: TokenService; deliveriesDue: () => void }): Background {
  const feed = createFeedNotifier();
  const flush = tokenFlush(options.tokens, options.observe);
  let stopWatching = () => {};
  return {
    links: { eventsCommitted: () => {}, deliveriesDue: options.deliveriesDue, feed },
    start() {
      stopWatching = options.store.events.watch(() => feed.placed());
      flush.start();
    },
    async stop() {
      feed.release();
      stopWatching();
      await flush.stop();
    },
  };
}

/** Token last-used times, written in the background and once more at the end, never on the request path. */
function tokenFlush(tokens: TokenService, observe: Observer): { start(): void; stop(): Promise<void> } {
  const write = () => tokens.flushLastUsed().catch((err: unknown) => observe({ kind: 'token-use-unrecorded', err }));
  let timer: NodeJS.Timeout | undefined;
  return {
    start() {
      timer = setInterval(write, TOKEN_FLUSH_MS);
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      await write();
    },
  };
}
