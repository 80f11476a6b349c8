// When a delivery starts again by hand, and what it becomes, for every engine. Engines read the row (and
// whether its subscription is active) in their transaction, ask these rules, and write what they decided.
// - A manual retry (webhook-service retry, the console's Resend): a failed, cancelled or succeeded delivery of an
//   active subscription starts a new round (attempt count reset: it counts the attempts of the current round),
//   due now; a succeeded one is sent again, as a receiver that lost it asks. A pending one that no live lease
//   holds is only made due now, its round going on. One a dispatcher holds for an attempt is not retried.
// - A recover (webhook-service recover): each selected delivery starts a new round, due at the given time;
//   nothing while the subscription is disabled.
import type { DeliveryStatus } from './delivery.js';

/** What the engine writes on the delivery's row; its lease is always released. */
export interface NewRound {
  status: 'pending';
  attemptCount: number;
  nextAttemptAt: Date;
}

/** A delivery as the engine read it for a manual retry. */
export interface RetryState {
  status: DeliveryStatus;
  attemptCount: number;
  leaseUntil: Date | null;
  subscriptionActive: boolean;
}

/** What a manual retry writes, or undefined when the delivery is in no state to be retried. */
export function manualRetry(state: RetryState, now: Date): NewRound | undefined {
  if (!state.subscriptionActive) return undefined;
  if (state.status === 'failed' || state.status === 'cancelled' || state.status === 'succeeded') return { status: 'pending', attemptCount: 0, nextAttemptAt: now };
  const leased = state.leaseUntil !== null && state.leaseUntil.getTime() > now.getTime();
  if (state.status === 'pending' && !leased) return { status: 'pending', attemptCount: state.attemptCount, nextAttemptAt: now };
  return undefined;
}

/**
 * What a recover writes on each delivery it selects, or undefined when it takes none (subscription disabled).
 * The engines make the selected deliveries due 1 ms apart in the order they were made, the newest at `dueAt`:
 * all due at once, and claimed oldest first (docs/webhooks.md, "Recovering what a receiver missed").
 */
export function recoveredRound(subscriptionActive: boolean, dueAt: Date): NewRound | undefined {
  return subscriptionActive ? { status: 'pending', attemptCount: 0, nextAttemptAt: dueAt } : undefined;
}
