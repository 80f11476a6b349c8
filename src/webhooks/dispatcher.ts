// The delivery engine: leases due deliveries from the outbox, sends them, records each attempt and its
// outcome. It runs beside the HTTP server and never on a request's path: the event sequencer calls wake()
// after a pass that made deliveries, which costs a flag and at most one setImmediate however many arrive.
//
// Isolation: at most `perSubscription` sends are in flight per subscription and `concurrency` in all, and a
// claim skips saturated subscriptions, so a slow or dead receiver holds at most its own few slots while the
// others keep flowing. A lease lasts the send timeout plus a margin; a dispatcher that dies leaves leases
// that expire, after which any dispatcher sends those deliveries again (at-least-once, same webhook-id).
//
// Its parts: send-slots.ts (the slots and the claim that fills them), delivery-attempt.ts (one attempt, sent,
// decided and recorded), dispatch-loop.ts (when to look at the outbox); this file puts them together.
import { systemClock, type Clock } from '../kit/clock.js';
import type { WebhookObserver } from './webhook-observations.js';
import type { ClaimedDelivery, WebhookStore } from './delivery.js';
import { createAttempt } from './delivery-attempt.js';
import { createDispatchLoop } from './dispatch-loop.js';
import { createSendSlots, fillSlots, settleOrAbandon } from './send-slots.js';
import { createSender, type Sender } from './sender.js';

export interface DispatcherOptions {
  store: WebhookStore;
  /** The scheduling clock: due times, attempt times, retry times, leases. Tests pass one they move. */
  clock?: Clock;
  /** Jitter source in [0, 1). */
  random?: () => number;
  /** Deadline of one attempt (WEBHOOK_TIMEOUT_MS). */
  timeoutMs: number;
  /** Hosts that skip the SSRF address check (WEBHOOK_ALLOWED_HOSTS). */
  allowedHosts: readonly string[];
  /** Sends in flight at most, over all subscriptions. */
  concurrency?: number;
  /** Sends in flight at most per subscription. */
  perSubscription?: number;
  /** Longest sleep between looks at the outbox (for deliveries that became due with no wake()). */
  pollMs?: number;
  /** How long stop() waits for in-flight sends before abandoning them (their leases expire; they are sent again). */
  stopGraceMs?: number;
  /** Replaces the HTTP sender (tests). */
  sender?: Sender;
  /**
   * Told of every recorded attempt, of every delivery not sent because its signing secret does not open here,
   * and of what went wrong in the background (an attempt not recorded, a failed claim, sends abandoned at stop):
   * metrics and the log subscribe to it.
   */
  observe?: WebhookObserver;
  /** A recorded attempt settled its delivery (succeeded or failed for good): its subscription has room again. */
  onSettled?: () => void;
  /**
   * Makes the deliveries of events committed so far (the event sequencer's pass); runOnce calls it first, so
   * that a test's runOnce sends what its writes announced.
   */
  prepare?: () => Promise<unknown>;
}

export interface Dispatcher {
  /** Starts the background loop: a first look at the outbox now, then on wake() and every pollMs. */
  start(): void;
  /** Stops claiming and waits (bounded by stopGraceMs) for in-flight sends to be recorded. */
  stop(): Promise<void>;
  /** Something may be due now (a commit wrote events). Cheap, and coalesced. */
  wake(): void;
  /**
   * Makes the deliveries of the events committed so far (options.prepare), then claims, sends and records
   * everything due at now(), including what becomes claimable as slots free up;
   * resolves with the number of attempts made once all of them are recorded. For tests with a fake clock.
   */
  runOnce(): Promise<number>;
}

/** Lease = timeout + this margin: time to record the attempt after the deadline. */
const LEASE_MARGIN_MS = 5_000;

export function createDispatcher(options: DispatcherOptions): Dispatcher {
  const { store } = options;
  const observe = options.observe ?? (() => {});
  const clock = options.clock ?? systemClock;
  const now = () => new Date(clock.now());
  const concurrency = Math.max(1, options.concurrency ?? 32);
  const perSubscription = Math.max(1, Math.min(options.perSubscription ?? 4, concurrency));
  const pollMs = Math.max(10, options.pollMs ?? 1_000);
  const abort = new AbortController();
  let stopped = false;

  const slots = createSendSlots(perSubscription);
  const attempt = createAttempt({
    store,
    send: options.sender ?? createSender({ timeoutMs: options.timeoutMs, allowedHosts: options.allowedHosts }),
    clock,
    random: options.random ?? Math.random,
    observe,
    onSettled: options.onSettled,
    signal: abort.signal,
  });
  const launch = (c: ClaimedDelivery) =>
    slots.occupy(
      c.subscriptionId,
      () => attempt(c).catch((err: unknown) => observe({ kind: 'delivery-attempt-crashed', deliveryId: c.deliveryId, err })),
      // A slot is free: look for more (in the background; runOnce drives its own loop).
      () => loop.wake(),
    );
  const fill = oneAtATime(
    () =>
      fillSlots({
        store,
        slots,
        concurrency,
        perSubscription,
        leaseMs: options.timeoutMs + LEASE_MARGIN_MS,
        now,
        stopped: () => stopped,
        launch,
        claimFailed: (err) => observe({ kind: 'delivery-claim-failed', err }),
      }),
    () => stopped,
  );
  const loop = createDispatchLoop(fill.run, () => untilNextDue(store, now, pollMs, observe));

  return {
    start: loop.start,

    async stop() {
      if (stopped) return;
      stopped = true;
      loop.stop();
      await fill.running()?.catch(() => {});
      await settleOrAbandon(slots, options.stopGraceMs ?? 3_000, (inFlight) => {
        observe({ kind: 'delivery-sends-abandoned', inFlight });
        abort.abort();
      });
    },

    wake: loop.wake,

    async runOnce() {
      await options.prepare?.();
      let total = 0;
      for (;;) {
        if (stopped) break;
        const launched = await fill.run();
        total += launched;
        if (slots.inFlight.size === 0 && launched === 0) break;
        if (slots.inFlight.size > 0) await Promise.race(slots.inFlight);
      }
      return total;
    },
  };
}

/**
 * How long the loop sleeps after a look: until the next due delivery, pollMs at most; pollMs when one is due
 * already but was not claimed (the slots are full, and a finishing send wakes the loop).
 */
async function untilNextDue(store: WebhookStore, now: () => Date, pollMs: number, observe: WebhookObserver): Promise<number> {
  try {
    const due = await store.nextDueAt();
    const wait = due ? due.getTime() - now().getTime() : 0;
    if (wait > 0) return Math.min(pollMs, wait + 5);
  } catch (err) {
    observe({ kind: 'delivery-due-time-unread', err });
  }
  return pollMs;
}

/**
 * Runs `once` one call at a time: a call while it runs shares that run, which goes round once more after it
 * (until `stopped()`), so what the later call asked for is seen; resolves with the sum of the rounds.
 */
function oneAtATime(once: () => Promise<number>, stopped: () => boolean): { run(): Promise<number>; running(): Promise<number> | undefined } {
  let current: Promise<number> | undefined;
  let again = false;
  return {
    run() {
      if (current) {
        again = true;
        return current;
      }
      current = (async () => {
        let total = 0;
        do {
          again = false;
          total += await once();
        } while (again && !stopped());
        return total;
      })().finally(() => {
        current = undefined;
      });
      return current;
    },
    running: () => current,
  };
}
