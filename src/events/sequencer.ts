// The background half of the event log: sequencing passes (feed positions and webhook deliveries for committed
// events) woken by this process's commits, by a poll (events committed by an instance that died before its
// pass, or by `plant-store import`), and the retention pass. What it placed and what it made it tells through
// onPlaced and onDeliveries (process/background.ts wires them to the feed's readers and the dispatcher); a pass that
// failed it reports as an observation.
import { tracing } from '../tracing/tracing-switch.js';
import { systemClock, type Clock } from '../kit/clock.js';
import type { EventLogStore } from './event-log.js';

/**
 * What the sequencer reports: kinds of the process's `Observation` (observations/observations.ts lists them with the rest, so
 * the process's one observer takes them), declared here so that the event log stays below observations/.
 */
export type SequencerObservation =
  /** A sequencing pass failed; the next wake or poll runs it again. */
  | { kind: 'sequencing-failed'; err: unknown }
  /** A retention pass failed; the next one tries again. */
  | { kind: 'retention-failed'; err: unknown };

export interface SequencerOptions {
  store: EventLogStore;
  /** The retention clock (tests move it). */
  clock?: Clock;
  /** Told of a sequencing or retention pass that failed: the process's observers, whose log says so. */
  observe?: (observation: SequencerObservation) => void;
  /** How long an event is kept (EVENT_RETENTION). */
  retentionMs: number;
  /**
   * Deliveries one pass makes at most: the bound on how long a pass holds the write lock, and so on how long a
   * plant write queued behind it waits (on SQLite about 15 µs a row).
   */
  maxDeliveriesPerPass?: number;
  /** Longest time between passes without a wake. */
  pollMs?: number;
  /**
   * Least time from the start of one pass to the start of the next: under load, the commits of that time share
   * one pass instead of one each (the feed lags by at most this much more).
   */
  minGapMs?: number;
  /** How often the retention pass runs. */
  retentionEveryMs?: number;
  /** Told when a pass of this process made deliveries. */
  onDeliveries?: () => void;
  /** Told when a pass of this process gave events their positions (feed readers wait for it). */
  onPlaced?: () => void;
}

export interface Sequencer {
  start(): void;
  /** Stops the loops and waits for the pass in flight. */
  stop(): Promise<void>;
  /**
   * A commit wrote events: a pass runs soon, or none where the store says it would have nothing to do (the
   * commits placed their events and no subscription is ready), and onPlaced is told at once. Cheap, and
   * coalesced.
   */
  wake(): void;
  /** Sequences everything committed now; resolves with how many events got positions (tests). */
  runOnce(): Promise<number>;
  /** Runs the retention pass now with the clock's time; resolves with how many events it removed. */
  retainOnce(): Promise<number>;
}

const RETAIN_BATCH = 1_000;

export function createSequencer(options: SequencerOptions): Sequencer {
  const { store } = options;
  const observe = options.observe ?? (() => {});
  const clock = options.clock ?? systemClock;
  const maxDeliveries = options.maxDeliveriesPerPass ?? 128;
  const pollMs = options.pollMs ?? 1_000;
  const retentionEveryMs = options.retentionEveryMs ?? 60_000;
  const minGapMs = options.minGapMs ?? 2;
  let lastPass = -Infinity;
  let stopped = false;
  let running: Promise<number> | undefined;
  let again = false;
  let scheduled = false;
  let poll: NodeJS.Timeout | undefined;
  let retention: NodeJS.Timeout | undefined;

  const placed = () => options.onPlaced?.();

  /** Passes until nothing committed is left unsequenced. */
  async function drain(): Promise<number> {
    let total = 0;
    for (;;) {
      // Tentative: a pass that placed nothing and made no delivery (an idle service's every poll) leaves no trace.
      const span = tracing.on ? tracing.tentative('sequencer pass') : undefined;
      let pass: Awaited<ReturnType<typeof store.sequence>>;
      try {
        const run = () => store.sequence(maxDeliveries, new Date(clock.now()));
        pass = await (span ? tracing.within(span, run) : run());
      } catch (err) {
        span?.fail(err);
        span?.end();
        throw err;
      }
      if (span && pass.events === 0 && pass.deliveries === 0) span.discard();
      else if (span) {
        span.set('plant_store.sequencer.events', pass.events);
        span.set('plant_store.sequencer.deliveries', pass.deliveries);
        span.end();
      }
      total += pass.events;
      if (pass.events > 0) placed();
      if (pass.deliveries > 0) options.onDeliveries?.();
      if (!pass.more || stopped) return total;
    }
  }

  function run(): Promise<number> {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      let total = 0;
      try {
        do {
          if (again) await gap();
          again = false;
          lastPass = performance.now();
          total += await drain();
        } while (again && !stopped);
      } finally {
        running = undefined;
      }
      return total;
    })();
    return running;
  }

  /** Milliseconds until minGapMs has passed since the last pass began (0 or less: now). */
  const untilGap = () => lastPass + minGapMs - performance.now();

  function gap(): Promise<void> {
    const wait = untilGap();
    return wait > 0 ? new Promise((resolve) => setTimeout(resolve, wait)) : Promise.resolve();
  }

  /** Whether the store says a pass now would have nothing to do; on a failure, the pass runs (and reports it). */
  function idle(): boolean {
    try {
      return store.passIdle?.() ?? false;
    } catch {
      return false;
    }
  }

  function background(): void {
    run().catch((err: unknown) => observe({ kind: 'sequencing-failed', err }));
  }

  async function retainOnce(): Promise<number> {
    const cutoff = new Date(clock.now() - options.retentionMs);
    let removed = 0;
    for (;;) {
      const n = await store.removeOlderThan(cutoff, RETAIN_BATCH);
      removed += n;
      if (n < RETAIN_BATCH || stopped) return removed;
    }
  }

  return {
    start() {
      if (poll || stopped) return;
      background();
      poll = setInterval(background, pollMs);
      poll.unref();
      const retain = () => retainOnce().catch((err: unknown) => observe({ kind: 'retention-failed', err }));
      void retain();
      retention = setInterval(retain, retentionEveryMs);
      retention.unref();
    },
    async stop() {
      stopped = true;
      clearInterval(poll);
      clearInterval(retention);
      await running?.catch(() => {});
    },
    wake() {
      if (scheduled || stopped) return;
      scheduled = true;
      const go = () => {
        scheduled = false;
        if (!running && !stopped && idle()) {
          // The commits placed their events and no one takes deliveries: what a pass would report, without it.
          lastPass = performance.now();
          placed();
          return;
        }
        background();
      };
      const wait = untilGap();
      if (wait > 0) setTimeout(go, wait).unref();
      else setImmediate(go);
    },
    runOnce: () => run(),
    retainOnce,
  };
}
