// What the services report about their work, as one closed set of observations (PostgREST's Observation):
// metrics and the log subscribe to one list, and a service (the store's group commit, the sequencer, the
// dispatcher, the guard) says what happened without knowing who listens. Each part declares the observations
// it makes beside its own code (PlantObservation, WebhookObservation, SequencerObservation, AuthObservation), so
// no feature imports this room; the union below joins them. Spans stay with the work they time,
// as each is a context (its children's parent, the trace a write or a delivery carries on); subscribers run in
// the reporter's context, so a line logged for an observation made inside a span names its trace (logger.ts).
// Waking another service (a commit wakes the sequencer, a pass wakes the dispatcher) is not an observation:
// that is control flow, wired as direct calls by background.ts and app.ts.
import type { SequencerObservation } from '../events/sequencer.js';
import type { AuthObservation } from '../limits/rate-limited-guard.js';
import type { PlantObservation } from '../plants/plant-service.js';
import type { AttemptIds, WebhookObservation } from '../webhooks/webhook-observations.js';

export type Observation =
  /** A group commit of plant writes: how many it held, how long it took (fsync included), whether it committed. */
  | { kind: 'commit'; size: number; seconds: number; ok: boolean }
  /** A plant change committed, by the event that announces it (plants/plant-service.ts). */
  | PlantObservation
  /** A webhook delivery attempt and the dispatcher's failures (webhooks/webhook-observations.ts). */
  | WebhookObservation
  /** A sequencing or retention pass of the event log that failed (events/sequencer.ts). */
  | SequencerObservation
  /** Tokens' last-used times not written by the background flush; the next flush writes them. */
  | { kind: 'token-use-unrecorded'; err: unknown }
  /** A request refused by bearer authentication (limits/rate-limited-guard.ts). */
  | AuthObservation;

export type Observer = (observation: Observation) => void;

/** The one list a process's services report to; metrics and the log subscribe to it. */
export interface Observers {
  /** Tells every subscriber; a subscriber that throws never disturbs the service that reported, nor the others. */
  readonly observe: Observer;
  /** Adds a subscriber; returns its removal. */
  subscribe(observer: Observer): () => void;
}

export function createObservers(): Observers {
  const subscribers = new Set<Observer>();
  return {
    observe(observation) {
      for (const subscriber of subscribers) {
        try {
          subscriber(observation);
        } catch {
          // An observer never disturbs the work it observes.
        }
      }
    },
    subscribe(observer) {
      subscribers.add(observer);
      return () => subscribers.delete(observer);
    },
  };
}

export interface LineLogger {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** The process's logger, as the log's subscriber uses it: itself, and a child per component. */
export interface ObservationLogger extends LineLogger {
  child(bindings: { component: string }): LineLogger;
}

/** The warning each background failure is logged as: its component (or the process's own logger) and its message. */
const FAILURE_LINES: Partial<Record<Observation['kind'], readonly ['webhooks' | 'events' | 'process', string]>> = {
  'delivery-attempt-unrecorded': ['webhooks', 'could not record a webhook attempt'],
  'delivery-attempt-crashed': ['webhooks', 'webhook attempt crashed; its lease will expire and it is sent again'],
  'delivery-claim-failed': ['webhooks', 'webhook dispatcher could not claim deliveries; will try again'],
  'delivery-due-time-unread': ['webhooks', 'webhook dispatcher could not read the next due time'],
  'delivery-sends-abandoned': ['webhooks', 'webhook sends still in flight at shutdown were abandoned; they will be sent again'],
  'sequencing-failed': ['events', 'could not sequence events; will try again'],
  'retention-failed': ['events', 'could not remove old events; will try again'],
  'token-use-unrecorded': ['process', 'could not record token use'],
};

/**
 * The log's subscriber: the lines an operator reads about deliveries (component webhooks), the event log's
 * passes (component events) and the token flush; commits, plant changes and auth failures are counted by the
 * metrics.
 */
export function observationLog(logger: ObservationLogger): Observer {
  const webhooks = logger.child({ component: 'webhooks' });
  const events = logger.child({ component: 'events' });
  return (o) => {
    switch (o.kind) {
      case 'delivery-secret-error':
        webhooks.warn({ ...o.ids, error: o.error }, 'webhook delivery not sent: its signing secret does not open with WEBHOOK_SECRET_KEYS');
        return;
      case 'delivery-attempt': {
        const detail = { ...o.ids, statusCode: o.statusCode, durationMs: o.durationMs };
        switch (o.outcome.status) {
          case 'succeeded':
            webhooks.debug(detail, 'webhook delivered');
            return;
          case 'pending':
            webhooks.info({ ...detail, error: o.error, nextAttemptAt: o.outcome.nextAttemptAt.toISOString() }, 'webhook attempt failed; will retry');
            return;
          case 'failed':
            webhooks.warn({ ...detail, error: o.error }, 'webhook delivery failed after its last retry');
            return;
          case 'disable-subscription':
            webhooks.warn({ ...detail, reason: o.outcome.reason }, 'webhook subscription disabled (see reason); `plant-store webhook enable` re-enables it');
            return;
        }
        return;
      }
      default: {
        // A background failure: one warning, with the observation's own fields (a delivery's ids spread out).
        const line = FAILURE_LINES[o.kind];
        if (!line) return;
        const [component, message] = line;
        const { kind, ids, ...rest } = o as { kind: string; ids?: AttemptIds } & Record<string, unknown>;
        void kind;
        (component === 'webhooks' ? webhooks : component === 'events' ? events : logger).warn({ ...rest, ...ids }, message);
        return;
      }
    }
  };
}
