// What recording an attempt does, for every engine: the delivery's new state, and whether its subscription
// stops. Engines carry it out in one transaction with the attempt row, under these rules:
// - an attempt always counts (attempt_count + 1) and releases the lease;
// - the status moves only from pending; a delivery cancelled while its attempt was in flight stays cancelled,
//   unless that attempt succeeded, which is then the truth;
// - a 410 Gone fails the delivery, disables the subscription and cancels its other pending deliveries.
import type { AttemptOutcome } from './delivery.js';

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
