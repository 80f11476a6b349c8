// The events feed's records, rules and store port. Every plant write commits its event (the outbox row) with
// the write; a background sequencer (sequencer.ts) then gives committed events their feed positions, one pass
// at a time, and creates their webhook deliveries, off the request path. Positions are assigned only to
// committed events and only by one pass at a time, so a reader that has seen position p never later finds an
// event at or below p: the feed is in the order events became visible, which on one plant is version order.

/** An event as the feed shows it (GET /events) and the webhooks send it (`webhook-id`, body). */
export interface FeedEvent {
  id: string;
  type: string;
  createdAt: Date;
  /** The exact body every delivery of the event sends (JSON text). */
  payload: string;
  position: bigint;
}

/** What one sequencing pass did. */
export interface SequencePass {
  /** Events that got positions. */
  events: number;
  /** Deliveries made (for events placed by this pass or earlier ones). */
  deliveries: number;
  /** Whether events without a position, or without their deliveries, remain (the pass stopped at a bound). */
  more: boolean;
}

/** Where an `after` cursor (an event id) stands. */
export type Cursor =
  | { kind: 'at'; position: bigint }
  /** Committed, not yet given a position (only for a moment): nothing follows it yet. */
  | { kind: 'pending' }
  /** No such event; `removedThrough` is the last position retention removed (0 when it never removed one). */
  | { kind: 'unknown'; removedThrough: bigint };

export interface EventLogStore {
  /**
   * Gives up to POSITIONS_PER_PASS of the oldest committed events without a position the next positions, then
   * makes, in position order, up to `maxDeliveries` deliveries of placed events that have none yet (fanOutPlan):
   * one per subscription, active when the pass reaches it, that chose the event's type. Placing is cheap and
   * never waits for deliveries, so the feed keeps up however many subscriptions there are. One pass at a time
   * across every instance (the engine's lock).
   */
  sequence(maxDeliveries: number, now: Date): Promise<SequencePass>;
  cursor(id: string): Promise<Cursor>;
  /** Up to `limit` events after `position` (from the oldest retained when null), in position order. */
  readAfter(position: bigint | null, limit: number): Promise<FeedEvent[]>;
  /**
   * Removes up to `maxEvents` events created before `cutoff` whose deliveries are all made and finished, with
   * those deliveries and their attempts (a pending delivery keeps its event); returns how many it removed.
   */
  removeOlderThan(cutoff: Date, maxEvents: number): Promise<number>;
  /**
   * Calls `listener` when another process sequenced events (PostgreSQL: LISTEN/NOTIFY); returns its removal.
   * Passes in this process are reported by the sequencer itself.
   */
  watch(listener: () => void): () => void;
}

/** Events one pass places at most. */
export const POSITIONS_PER_PASS = 1_000;

/**
 * How one pass makes deliveries within its budget: none (no subscription), whole events while one event's
 * deliveries fit the budget, or else a slice of one event's subscriptions (in id order, after `after`) at a
 * time, so that no pass, and so no plant write queued behind one, waits for more than `maxDeliveries` rows
 * however many subscriptions there are.
 */
export type FanOutPlan =
  | { kind: 'none' }
  | { kind: 'whole'; events: number }
  | { kind: 'slice'; after: string; limit: number };

export function fanOutPlan(maxDeliveries: number, subscriptions: number, cursor: string | null): FanOutPlan {
  if (subscriptions === 0) return { kind: 'none' };
  if (cursor === null && subscriptions <= maxDeliveries) {
    return { kind: 'whole', events: Math.min(POSITIONS_PER_PASS, Math.floor(maxDeliveries / subscriptions)) };
  }
  // Subscription ids are never empty, so '' is before the first.
  return { kind: 'slice', after: cursor ?? '', limit: maxDeliveries };
}

/** An `after` that names no event: gone (410) once retention has removed events, which it may have been; else unknown (400). */
export function unknownCursor(removedThrough: bigint): 'gone' | 'unknown' {
  return removedThrough > 0n ? 'gone' : 'unknown';
}
