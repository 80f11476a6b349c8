// One attempt at a claimed delivery: send it (or fail it at once when its secret does not open here), decide
// the outcome by the retry policy, record the attempt, and tell the observers. Traced as a child of the write
// that made the event, and the receiver's trace continues it.
import type { Clock } from '../kit/clock.js';
import type { WebhookObserver } from './webhook-observations.js';
import type { AttemptRecord, ClaimedDelivery, WebhookStore } from './delivery.js';
import { deliveryMessage } from './delivery-message.js';
import { decideOutcome } from './retry-policy.js';
import type { SendResult, Sender } from './sender.js';
import { traceFromText, type SpanHandle } from '../tracing/spans.js';
import { tracing } from '../tracing/tracing-switch.js';

export interface AttemptDeps {
  store: WebhookStore;
  send: Sender;
  clock: Clock;
  /** Jitter source in [0, 1). */
  random: () => number;
  /** Told of every recorded attempt, of a delivery whose secret does not open here, and of an attempt not recorded. */
  observe: WebhookObserver;
  /** A recorded attempt settled its delivery (succeeded or failed for good). */
  onSettled?: () => void;
  /** Aborts the sends in flight; an aborted send is not recorded. */
  signal: AbortSignal;
}

/** Makes one attempt at a claimed delivery; resolves once it is recorded (or left to its lease). */
export function createAttempt(deps: AttemptDeps): (c: ClaimedDelivery) => Promise<void> {
  const now = () => new Date(deps.clock.now());

  async function attemptIn(c: ClaimedDelivery, span: SpanHandle | undefined): Promise<void> {
    const at = now();
    const ids = { deliveryId: c.deliveryId, subscriptionId: c.subscriptionId, eventId: c.eventId, attempt: c.attemptCount + 1 };
    let result: SendResult;
    if (c.secretError !== undefined) {
      // A secret this process cannot open fails this delivery alone, as a failed attempt on the usual retry
      // schedule: a process that holds the key (or this one, restarted with it) sends it later.
      result = { statusCode: null, retryAfter: null, error: `not sent: ${c.secretError}`, durationMs: 0 };
      deps.observe({ kind: 'delivery-secret-error', ids, error: c.secretError });
    } else {
      result = await sendTraced(c, span);
      if (deps.signal.aborted) return; // stopping: not recorded; the lease expires and it is sent again
    }
    const ended = now();
    const outcome = decideOutcome(result, c.attemptCount, ended, deps.random);
    span?.set('plant_store.webhook.outcome', outcome.status);
    if (outcome.status !== 'succeeded') span?.fail();
    const record: AttemptRecord = {
      at,
      statusCode: result.statusCode,
      error: result.error,
      durationMs: result.durationMs,
      ...(result.request && { request: result.request }),
      ...(result.response && { response: result.response }),
    };
    try {
      await deps.store.recordAttempt(c.deliveryId, record, outcome);
    } catch (err) {
      // Its lease still holds it: it is sent again once that expires.
      deps.observe({ kind: 'delivery-attempt-unrecorded', ids, err });
      return;
    }
    deps.observe({ kind: 'delivery-attempt', ids, outcome, statusCode: result.statusCode, durationMs: result.durationMs, error: result.error });
    if (outcome.status !== 'pending') deps.onSettled?.();
  }

  /** The exchange with the receiver, its address check included, in a span of its own apart from recording it. */
  async function sendTraced(c: ClaimedDelivery, span: SpanHandle | undefined): Promise<SendResult> {
    const message = deliveryMessage(c);
    const headers = traceHeaders(c, span, message.headers);
    const input = { url: c.url, secret: c.secret, eventId: c.eventId, payload: message.body, headers };
    const sending = span ? tracing.start('webhook send') : undefined;
    const result = await (sending ? tracing.within(sending, () => deps.send(input, deps.signal)) : deps.send(input, deps.signal));
    if (sending) {
      if (result.statusCode !== null) sending.set('http.response.status_code', result.statusCode);
      if (result.error !== null) sending.fail();
      sending.end();
    }
    span?.set('plant_store.webhook.address_refused', result.refused === true);
    if (result.statusCode !== null) span?.set('http.response.status_code', result.statusCode);
    return result;
  }

  return async (c) => {
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
