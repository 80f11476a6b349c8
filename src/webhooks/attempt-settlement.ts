// What recording an attempt does, for every engine: the delivery's new state, and whether its subscription
// stops. Engines read the delivery's row locked in their transaction, ask settleAttempt, and write what it
// decided in one transaction with the attempt row, under these rules:
// - an attempt always counts (attempt_count + 1) and releases the lease;
// - the status moves only from pending; a delivery cancelled while its attempt was in flight stays cancelled,
//   unless that attempt succeeded, which is then the truth;
// - a delivery that settled (its outcome is not another try) makes room for its subscription's next ones;
// - a 410 Gone fails the delivery, disables the subscription and cancels its other pending deliveries.
import type { AttemptOutcome, DeliveryStatus } from './delivery.js';

export interface Settlement {
  status: 'succeeded' | 'failed' | 'pending';
  /** When the delivery is tried again (pending only). */
  nextAttemptAt: Date | null;
  /** Set when the subscription must be disabled, with the reason it records. */
  disableReason?: string;
}

export function settlement(outcome: AttemptOutcome): Settlement {
  switch (outcome.status) {
    case 'succeeded':
    case 'failed':
      return { status: outcome.status, nextAttemptAt: null };
    case 'pending':
      return { status: 'pending', nextAttemptAt: outcome.nextAttemptAt };
    case 'disable-subscription':
      return { status: 'failed', nextAttemptAt: null, disableReason: outcome.reason };
  }
}

/** The delivery row as the engine read it, locked, before the attempt is recorded. */
export interface DeliveryState {
  status: DeliveryStatus;
  nextAttemptAt: Date | null;
  attemptCount: number;
}

/** What the engine writes: the delivery's new columns (its lease is always released) and what follows. */
export interface SettledAttempt {
  status: DeliveryStatus;
  nextAttemptAt: Date | null;
  attemptCount: number;
  /** The subscription may be offered its next deliveries. */
  makesRoom: boolean;
  /** Disable the subscription with this reason and cancel its other pending deliveries. */
  disableReason?: string;
}

export function settleAttempt(state: DeliveryState, outcome: AttemptOutcome): SettledAttempt {
  const s = settlement(outcome);
  const moves = state.status === 'pending' || (state.status === 'cancelled' && s.status === 'succeeded');
  return {
    status: moves ? s.status : state.status,
    nextAttemptAt: moves ? s.nextAttemptAt : state.nextAttemptAt,
    attemptCount: state.attemptCount + 1,
    makesRoom: s.status !== 'pending',
    ...(s.disableReason !== undefined ? { disableReason: s.disableReason } : {}),
  };
}
