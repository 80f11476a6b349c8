// What the dispatcher reports about deliveries: its part of the process's observations
// (observations/observations.ts), which the log and the metrics subscribe to.
import type { AttemptOutcome } from './delivery.js';

/** Which delivery attempt: what its log line names. */
export interface AttemptIds {
  deliveryId: string;
  subscriptionId: string;
  eventId: string;
  attempt: number;
}

export type WebhookObservation =
  /** A recorded webhook delivery attempt and what it decided. */
  | { kind: 'delivery-attempt'; ids: AttemptIds; outcome: AttemptOutcome; statusCode: number | null; durationMs: number; error: string | null }
  /** A delivery not sent: its subscription's signing secret does not open with this process's keys. */
  | { kind: 'delivery-secret-error'; ids: AttemptIds; error: string }
  /** A delivery attempt made but not recorded: its lease still holds it, and it is sent again once that expires. */
  | { kind: 'delivery-attempt-unrecorded'; ids: AttemptIds; err: unknown }
  /** A delivery attempt that threw before it was recorded: its lease expires and it is sent again. */
  | { kind: 'delivery-attempt-crashed'; deliveryId: string; err: unknown }
  /** The dispatcher's claim of due deliveries failed; it claims again on its next look. */
  | { kind: 'delivery-claim-failed'; err: unknown }
  /** The dispatcher could not read when the next delivery is due; it sleeps its poll interval. */
  | { kind: 'delivery-due-time-unread'; err: unknown }
  /** Sends still in flight when the dispatcher's stop grace ran out, aborted unrecorded (sent again later). */
  | { kind: 'delivery-sends-abandoned'; inFlight: number };

export type WebhookObserver = (observation: WebhookObservation) => void;
