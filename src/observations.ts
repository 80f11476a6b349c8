// What the services report about their work, as one closed set of observations (PostgREST's Observation):
// metrics and the log subscribe to one list, and a service says what happened without knowing who listens.
// Waking another service (a commit wakes the sequencer, a pass wakes the dispatcher) is not an observation:
// that is control flow, wired as direct calls by background.ts and app.ts.
import type { AuthFailureReason } from './auth/bearer-guard.js';
import type { AttemptOutcome } from './webhooks/delivery.js';
import type { EventType } from './webhooks/outbox-events.js';

/** Which delivery attempt: what its log line names. */
export interface AttemptIds {
  deliveryId: string;
  subscriptionId: string;
  eventId: string;
  attempt: number;
}

export type Observation =
  /** A group commit of plant writes: how many it held, how long it took (fsync included), whether it committed. */
  | { kind: 'commit'; size: number; seconds: number; ok: boolean }
  /** A plant change committed, by the event that announces it. */
  | { kind: 'plant-change'; event: EventType }
  /** A recorded webhook delivery attempt and what it decided. */
  | { kind: 'delivery-attempt'; ids: AttemptIds; outcome: AttemptOutcome; statusCode: number | null; durationMs: number; error: string | null }
  /** A delivery not sent: its subscription's signing secret does not open with this process's keys. */
  | { kind: 'delivery-secret-error'; ids: AttemptIds; error: string }
  /** A request refused by bearer authentication. */
  | { kind: 'auth-failure'; reason: AuthFailureReason };

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

export interface ObservationLogger {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** The log's subscriber: the lines an operator reads about deliveries (the rest is counted by the metrics). */
export function observationLog(webhooks: ObservationLogger): Observer {
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
      }
    }
  };
}
