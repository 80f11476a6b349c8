// Webhook records (subscriptions, deliveries, attempts) and the store port every engine
// implements for them.
import type { ReceivedAnswer, SentRequest } from './sender.js';

/**
 * How a subscription's deliveries carry an event: `plain` sends the event's body as it is (the document's
 * `webhooks` section), `envelope` wraps it in the Standard Webhooks envelope `{type, timestamp, data}`.
 */
export const WEBHOOK_FORMATS = ['plain', 'envelope'] as const;
export type WebhookFormat = (typeof WEBHOOK_FORMATS)[number];

export interface WebhookSubscription {
  id: string;
  url: string;
  description: string | null;
  /** The event types it receives, in EVENT_TYPES order (events/event.ts). */
  events: string[];
  /** The body its deliveries carry. */
  format: WebhookFormat;
  /**
   * The `whsec_` signing secret; needed in clear to sign, so it is stored, encrypted when a key is set
   * (secret-box.ts). Read back from the store it is the stored form: only a claim opens it.
   */
  secret: string;
  createdAt: Date;
  disabledAt: Date | null;
  disabledReason: string | null;
}

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed' | 'cancelled';

export interface AttemptRecord {
  at: Date;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  /**
   * The request sent: headers as sent and the exact body. Absent when nothing was sent, and on attempts recorded
   * before the store kept it.
   */
  request?: SentRequest;
  /** The answer, bounded (sender.ts): absent when none came, and on attempts recorded before the store kept it. */
  response?: ReceivedAnswer;
}

export interface DeliveryRecord {
  id: string;
  eventId: string;
  subscriptionId: string;
  status: DeliveryStatus;
  nextAttemptAt: Date | null;
  createdAt: Date;
  attempts: AttemptRecord[];
}

/** A delivery claimed by a dispatcher, with everything needed to send it. */
export interface ClaimedDelivery {
  deliveryId: string;
  eventId: string;
  subscriptionId: string;
  url: string;
  /** The signing secret in clear; empty when `secretError` is set. */
  secret: string;
  /**
   * Why the secret could not be opened with this process's WEBHOOK_SECRET_KEYS (naming the key id it needs,
   * never a key): the delivery is not sent, and its attempt is recorded as failed with this reason.
   */
  secretError?: string;
  /** The event's exact body. */
  payload: string;
  /** The event's type (newPlant, plantUpdated, plantDeleted). */
  eventType: string;
  /** When the write that made the event committed. */
  eventCreatedAt: Date;
  /** The subscription's format. */
  format: WebhookFormat;
  /** Attempts already made before this one. */
  attemptCount: number;
  /** The trace context of the write that made the event (tracing/spans.ts traceText), when it was traced. */
  trace?: string;
}

/** What an attempt leads to: done, try again at a time, give up, or the subscription is gone (410). */
export type AttemptOutcome =
  | { status: 'succeeded' }
  | { status: 'pending'; nextAttemptAt: Date }
  | { status: 'failed' }
  | { status: 'disable-subscription'; reason: string };

/** A claim of due deliveries (see WebhookStore.claimDueDeliveries and claim-policy.ts). */
export interface ClaimRequest {
  now: Date;
  leaseUntil: Date;
  limit: number;
  perSubscription: number;
  skipSubscriptions: string[];
}

/**
 * Deliveries of one subscription to start again (WebhookStore.requeueDeliveries); which ones is the rule of
 * webhooks/webhook-service.ts (recover).
 */
export interface RequeueRequest {
  subscriptionId: string;
  /** The states a delivery may be in to be taken. */
  statuses: readonly DeliveryStatus[];
  /** Only deliveries created at or after this. */
  createdSince: Date;
  /** At most this many, oldest (created) first. */
  limit: number;
  /** When the first attempt of their new round is due. */
  dueAt: Date;
}

/** What a requeue did: how many it started again, and whether deliveries it could have taken remain. */
export interface RequeueResult {
  queued: number;
  more: boolean;
}

/** Why a new subscription is refused (the rule is webhooks/webhook-service.ts's). */
export type SubscriptionRefusal = { kind: 'duplicate'; of: string } | { kind: 'limit'; max: number };

export interface WebhookStore {
  /**
   * Inserts the subscription unless `admit`, shown every stored subscription, refuses it; the look and the
   * insert are one step under the engine's write lock, so concurrent creates cannot both pass the rule.
   */
  insertSubscription(
    sub: WebhookSubscription,
    admit: (existing: readonly WebhookSubscription[]) => SubscriptionRefusal | undefined,
  ): Promise<SubscriptionRefusal | undefined>;
  listSubscriptions(): Promise<WebhookSubscription[]>;
  getSubscription(id: string): Promise<WebhookSubscription | undefined>;
  /** Deletes a subscription and cancels its pending deliveries; false when absent. */
  deleteSubscription(id: string): Promise<boolean>;
  /** Stores `next` as the subscription's secret if it still holds `current` (re-encryption); false otherwise. */
  replaceSecret(id: string, current: string, next: string): Promise<boolean>;
  /** Clears a subscription's disabled state (URL and secret unchanged); false when absent or not disabled. */
  enableSubscription(id: string): Promise<boolean>;
  /**
   * Leases up to `limit` due pending deliveries (next attempt at or before `now`, no live lease) until
   * `leaseUntil`, skipping the subscriptions in `skipSubscriptions`, at most `perSubscription` each.
   * A lease that expires (a dispatcher died) makes the delivery due again: at-least-once.
   */
  claimDueDeliveries(input: ClaimRequest): Promise<ClaimedDelivery[]>;
  /** Records an attempt and its outcome, releasing the lease. */
  recordAttempt(deliveryId: string, attempt: AttemptRecord, outcome: AttemptOutcome): Promise<void>;
  /** Deliveries of one subscription, newest first, with their attempts. */
  listDeliveries(subscriptionId: string, limit: number): Promise<DeliveryRecord[]>;
  getDelivery(subscriptionId: string, deliveryId: string): Promise<DeliveryRecord | undefined>;
  /**
   * Makes a delivery of an active subscription due at `now`: a failed or cancelled one pending again for a
   * new round (attempt count reset), a pending one that no live lease holds (waiting for its next attempt)
   * at once, its round going on. False when it is in no such state (succeeded, or being sent).
   */
  retryDelivery(subscriptionId: string, deliveryId: string, now: Date): Promise<boolean>;
  /**
   * Starts a new round for the deliveries `input` selects, in one transaction and only while the
   * subscription is active (else nothing): each is made pending, due at `dueAt`, attempt count reset, no
   * lease, as retryDelivery does for a failed one. `more` tells whether selected deliveries were left
   * beyond `limit`.
   */
  requeueDeliveries(input: RequeueRequest): Promise<RequeueResult>;
  /** The earliest next attempt among pending deliveries, for the dispatcher's timer. */
  nextDueAt(): Promise<Date | null>;
  /** How many deliveries are pending (the outbox backlog), for metrics; cheap (a partial index). */
  countPendingDeliveries(): Promise<number>;
}
