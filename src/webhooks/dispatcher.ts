// The delivery engine: leases due deliveries from the outbox, sends them, records each attempt and its
// outcome. It runs beside the HTTP server and never on a request's path: the event sequencer calls wake()
// after a pass that made deliveries, which costs a flag and at most one setImmediate however many arrive.
//
// Isolation: at most `perSubscription` sends are in flight per subscription and `concurrency` in all, and a
// claim skips saturated subscriptions, so a slow or dead receiver holds at most its own few slots while the
// others keep flowing. A lease lasts the send timeout plus a margin; a dispatcher that dies leaves leases
// that expire, after which any dispatcher sends those deliveries again (at-least-once, same webhook-id).
import { systemClock, type Clock } from '../clock.js';
import type { Observer } from '../observations.js';
import type { AttemptRecord, ClaimedDelivery, WebhookStore } from './delivery.js';
import { deliveryMessage } from './delivery-message.js';
import { decideOutcome } from './retry-policy.js';
import { createSender, type SendResult, type Sender } from './sender.js';
import { traceFromText, type SpanHandle } from '../tracing/spans.js';
import { tracing } from '../tracing/tracing-switch.js';

export interface DispatcherLogger {
  warn(obj: object, msg: string): void;
}

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
  logger: DispatcherLogger;
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
   * Told of every recorded attempt and of every delivery not sent because its signing secret does not open
   * here (metrics and the log's lines about deliveries subscribe to it).
   */
  observe?: Observer;
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
  const store = options.store;
  const clock = options.clock ?? systemClock;
  const now = () => new Date(clock.now());
  const random = options.random ?? Math.random;
  const log = options.logger;
  const concurrency = Math.max(1, options.concurrency ?? 32);
  const perSubscription = Math.max(1, Math.min(options.perSubscription ?? 4, concurrency));
  const pollMs = Math.max(10, options.pollMs ?? 1_000);
  const stopGraceMs = options.stopGraceMs ?? 3_000;
  const leaseMs = options.timeoutMs + LEASE_MARGIN_MS;
  const send = options.sender ?? createSender({ timeoutMs: options.timeoutMs, allowedHosts: options.allowedHosts });
  const observe: Observer = options.observe ?? (() => {});

  /** In-flight attempts: each settles once its outcome is recorded (or recording failed). */
  const inFlight = new Set<Promise<void>>();
  const perSub = new Map<string, number>();
  const abort = new AbortController();
  let running = false;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let wakeScheduled = false;
  /** One fill at a time: claims must see the in-flight counts of the previous claim. */
  let filling: Promise<number> | undefined;
  let fillAgain = false;

  function skipList(): string[] {
    const out: string[] = [];
    for (const [sub, n] of perSub) if (n >= perSubscription) out.push(sub);
    return out;
  }

  /** Claims as many due deliveries as free slots allow, without exceeding any subscription's cap, and launches them. */
  async function fillOnce(): Promise<number> {
    let launched = 0;
    // Each round gives every unsaturated subscription at most (cap - the most any of them has in flight), so no
    // subscription exceeds the cap; rounds repeat while they yield and slots remain.
    for (let round = 0; round <= perSubscription && !stopped; round++) {
      const free = concurrency - inFlight.size;
      if (free <= 0) break;
      const skip = skipList();
      let busiest = 0;
      for (const [sub, n] of perSub) if (n < perSubscription) busiest = Math.max(busiest, n);
      const at = now();
      const per = perSubscription - busiest;
      let claimed: ClaimedDelivery[];
      try {
        claimed = await store.claimDueDeliveries({
          now: at,
          leaseUntil: new Date(at.getTime() + leaseMs),
          limit: free,
          perSubscription: per,
          skipSubscriptions: skip,
        });
      } catch (err) {
        log.warn({ err }, 'webhook dispatcher could not claim deliveries; will try again');
        break;
      }
      const got = new Map<string, number>();
      for (const c of claimed) {
        got.set(c.subscriptionId, (got.get(c.subscriptionId) ?? 0) + 1);
        launch(c);
      }
      launched += claimed.length;
      // Another round only helps a subscription that got all it was offered and still has room: one that got
      // fewer had nothing more due, one that got none was skipped or idle.
      let more = false;
      for (const [sub, n] of got) if (n === per && (perSub.get(sub) ?? 0) < perSubscription) more = true;
      if (!more) break;
    }
    return launched;
  }

  function launch(c: ClaimedDelivery): void {
    perSub.set(c.subscriptionId, (perSub.get(c.subscriptionId) ?? 0) + 1);
    const p = attempt(c)
      .catch((err: unknown) => log.warn({ err, deliveryId: c.deliveryId }, 'webhook attempt crashed; its lease will expire and it is sent again'))
      .finally(() => {
      inFlight.delete(p);
      const n = (perSub.get(c.subscriptionId) ?? 1) - 1;
      if (n <= 0) perSub.delete(c.subscriptionId);
      else perSub.set(c.subscriptionId, n);
      // A slot is free: look for more (background mode only; runOnce drives its own loop).
      if (running && !stopped) wake();
    });
    inFlight.add(p);
  }

  async function attempt(c: ClaimedDelivery): Promise<void> {
    // The attempt continues the trace of the write that made the event; the receiver's continues it in turn.
    const span = tracing.on ? attemptSpan(c) : undefined;
    try {
      await (span ? tracing.within(span, () => attemptIn(c, span)) : attemptIn(c, span));
    } catch (err) {
      span?.fail(err);
      throw err;
    } finally {
      span?.end();
    }
  }

  async function attemptIn(c: ClaimedDelivery, span: SpanHandle | undefined): Promise<void> {
    const at = now();
    const ids = { deliveryId: c.deliveryId, subscriptionId: c.subscriptionId, eventId: c.eventId, attempt: c.attemptCount + 1 };
    let result: SendResult;
    if (c.secretError !== undefined) {
      // A secret this process cannot open fails this delivery alone, as a failed attempt on the usual retry
      // schedule: a process that holds the key (or this one, restarted with it) sends it later.
      result = { statusCode: null, retryAfter: null, error: `not sent: ${c.secretError}`, durationMs: 0 };
      observe({ kind: 'delivery-secret-error', ids, error: c.secretError });
    } else {
      const message = deliveryMessage(c);
      const headers = traceHeaders(c, span, message.headers);
      const input = { url: c.url, secret: c.secret, eventId: c.eventId, payload: message.body, headers };
      // The exchange with the receiver, its address check included, apart from recording the outcome after it.
      const sending = span ? tracing.start('webhook send') : undefined;
      result = await (sending ? tracing.within(sending, () => send(input, abort.signal)) : send(input, abort.signal));
      if (sending) {
        if (result.statusCode !== null) sending.set('http.response.status_code', result.statusCode);
        if (result.error !== null) sending.fail();
        sending.end();
      }
      span?.set('plant_store.webhook.address_refused', result.refused === true);
      if (result.statusCode !== null) span?.set('http.response.status_code', result.statusCode);
      if (abort.signal.aborted) return; // stopping: not recorded; the lease expires and it is sent again
    }
    const ended = now();
    const outcome = decideOutcome(result, c.attemptCount, ended, random);
    span?.set('plant_store.webhook.outcome', outcome.status);
    if (outcome.status !== 'succeeded') span?.fail();
    const record: AttemptRecord = { at, statusCode: result.statusCode, error: result.error, durationMs: result.durationMs };
    try {
      await store.recordAttempt(c.deliveryId, record, outcome);
    } catch (err) {
      // The lease still holds it; when it expires the delivery is sent again (at-least-once).
      log.warn({ err, ...ids }, 'could not record a webhook attempt');
      return;
    }
    observe({ kind: 'delivery-attempt', ids, outcome, statusCode: result.statusCode, durationMs: result.durationMs, error: result.error });
    if (outcome.status !== 'pending') options.onSettled?.();
  }

  /** One fill at a time; a fill requested meanwhile runs right after. */
  function fill(): Promise<number> {
    if (filling) {
      fillAgain = true;
      return filling;
    }
    filling = (async () => {
      let total = 0;
      do {
        fillAgain = false;
        total += await fillOnce();
      } while (fillAgain && !stopped);
      return total;
    })().finally(() => {
      filling = undefined;
    });
    return filling;
  }

  function wake(): void {
    if (!running || stopped || wakeScheduled) return;
    wakeScheduled = true;
    setImmediate(() => {
      wakeScheduled = false;
      void tick();
    });
  }

  /** Background step: fill, then sleep until the next due time (at most pollMs). */
  async function tick(): Promise<void> {
    if (!running || stopped) return;
    await fill();
    if (!running || stopped) return;
    let delay = pollMs;
    try {
      const due = await store.nextDueAt();
      if (due) {
        const wait = due.getTime() - now().getTime();
        // Due already but not claimed: slots are full, and a finishing send wakes us.
        if (wait > 0) delay = Math.min(pollMs, wait + 5);
      }
    } catch (err) {
      log.warn({ err }, 'webhook dispatcher could not read the next due time');
    }
    clearTimeout(timer);
    timer = setTimeout(() => void tick(), delay);
    timer.unref();
  }

  return {
    start() {
      if (running || stopped) return;
      running = true;
      wake();
    },

    async stop() {
      if (stopped) return;
      stopped = true;
      running = false;
      clearTimeout(timer);
      await filling?.catch(() => {});
      if (inFlight.size === 0) return;
      let grace: NodeJS.Timeout | undefined;
      const expired = new Promise<'expired'>((resolve) => {
        grace = setTimeout(() => resolve('expired'), stopGraceMs);
      });
      const all = Promise.allSettled([...inFlight]).then(() => 'done' as const);
      const first = await Promise.race([all, expired]);
      clearTimeout(grace);
      if (first === 'expired') {
        log.warn({ inFlight: inFlight.size }, 'webhook sends still in flight at shutdown were abandoned; they will be sent again');
        abort.abort();
        await all;
      }
    },

    wake,

    async runOnce() {
      await options.prepare?.();
      let total = 0;
      for (;;) {
        if (stopped) break;
        const launched = await fill();
        total += launched;
        if (inFlight.size === 0 && launched === 0) break;
        if (inFlight.size > 0) await Promise.race(inFlight);
      }
      return total;
    },
  };
}

/** The span of one delivery attempt: a child of the event's write's trace (a new trace when it had none). */
function attemptSpan(c: ClaimedDelivery): SpanHandle {
  return tracing.start(
    'webhook attempt',
    {
      'plant_store.webhook.delivery_id': c.deliveryId,
      'plant_store.webhook.subscription_id': c.subscriptionId,
      'plant_store.webhook.event_id': c.eventId,
      'plant_store.webhook.event_type': c.eventType,
      'plant_store.webhook.attempt': c.attemptCount + 1,
    },
    traceFromText(c.trace),
  );
}

/**
 * The delivery's headers with `traceparent` (and `tracestate`): the attempt's span when tracing is on here,
 * else the event's write's context as stored. Unchanged when the event was written untraced.
 */
function traceHeaders(c: ClaimedDelivery, span: SpanHandle | undefined, headers: Readonly<Record<string, string>>): Readonly<Record<string, string>> {
  const trace = span?.headers() ?? traceFromText(c.trace);
  if (!trace) return headers;
  return trace.tracestate ? { ...headers, traceparent: trace.traceparent, tracestate: trace.tracestate } : { ...headers, traceparent: trace.traceparent };
}
