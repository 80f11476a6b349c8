// The events feed's records, rules and store port. Every plant write commits its event (the outbox row) with
// the write. Its feed position is given where the engine allows it safely: on SQLite by the commit itself (one
// writer holds the lock, so positions are in commit order); on PostgreSQL, where commits of several writers
// interleave, by a background sequencing pass (sequencer.ts, passes.ts), one pass at a time. Either way positions
// go only to committed events, so a reader that has seen position p never later finds an event at or below p:
// the feed is in the order events became visible, which on one plant is version order. The passes also make the
// events' webhook deliveries, off the request path, on both engines.

/** An event as the feed shows it (GET /events) and the webhooks send it (`webhook-id`, body). */
export interface FeedEvent {
  id: string;
  type: string;
  createdAt: Date;
  /** The exact body every delivery of the event sends (JSON text). */
  payload: string;
  position: bigint;
  /** The trace context of the write that made it (tracing/spans.ts traceText), when that write was traced. */
  trace?: string;
}

/** What a reader asks the feed for: events of these types only, events of this plant only (both: both). */
export interface EventFilter {
  types?: readonly string[];
  plant?: bigint;
}

/** The shape of a filter, where statements are kept per shape: '', 't', 'p' or 'tp'. */
export function filterShape(filter: EventFilter | undefined): '' | 't' | 'p' | 'tp' {
  return `${filter?.types ? 't' : ''}${filter?.plant !== undefined ? 'p' : ''}` as '' | 't' | 'p' | 'tp';
}

/** What one sequencing pass did. */
export interface SequencePass {
  /** Events that joined the feed since the previous pass of this process: placed by it, by another instance's passes, or (SQLite) by their commits. */
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
  /**
   * No such event; `removedThrough` is the last position retention removed (0 when it never removed one), and
   * `restores` the restores from a backup the store went through (storage/restores.ts), newest first.
   */
  | { kind: 'unknown'; removedThrough: bigint; restores: readonly RestoredLog[] };

/** A restore from a backup, as the feed needs it: the events created after the backup's newest one and before it are gone. */
export interface RestoredLog {
  restoredAt: Date;
  /** The creation time of the newest event the backup held; null when it held none. */
  newestEventAt: Date | null;
}

export interface EventLogStore {
  /**
   * Gives up to POSITIONS_PER_PASS of the oldest committed events without a position the next positions, then
   * makes up to `maxDeliveries` deliveries: for the ready active subscriptions furthest behind, the events after
   * each one's cursor that it chose, within its room (deliveriesFor, nextCursor); a subscription without room
   * is marked not ready. Placing is cheap and never waits for deliveries, so the feed keeps up however many
   * subscriptions there are. One pass at a time across every instance (the engine's lock). Written once in
   * passes.ts; the engine runs it over its statements in its transaction.
   */
  sequence(maxDeliveries: number, now: Date): Promise<SequencePass>;
  cursor(id: string): Promise<Cursor>;
  /**
   * Up to `limit` events after `position` (from the oldest retained when null), in position order, and only as
   * many as `maxBytes` of payload allow (READ_AT_LEAST's rule): what one read loads is bounded by the page's
   * byte budget, whatever size the events are, not by `limit` times the largest event. With a filter, only the
   * events it keeps (types, plant: webhook_events_plant serves the plant's), in the same order.
   */
  readAfter(position: bigint | null, limit: number, maxBytes?: number, filter?: EventFilter): Promise<FeedEvent[]>;
  /** The position of the newest event placed (0 when none ever was): a stream without a cursor starts after it. */
  lastPosition(): Promise<bigint>;
  /**
   * Removes up to `maxEvents` events created before `cutoff` with no pending delivery, with their deliveries
   * and attempts; returns how many it removed. A subscription whose cursor is still behind such an event never
   * gets it (it fell more than the retention behind).
   */
  removeOlderThan(cutoff: Date, maxEvents: number): Promise<number>;
  /**
   * For metrics, read at scrape time: events committed and not yet placed, and how many log positions the
   * active subscription furthest behind still has to go (0 without subscriptions).
   */
  backlog(): Promise<{ unplaced: number; behind: number }>;
  /**
   * Whether a pass now would do nothing but report events that their commits placed: every committed event has
   * its position and no active subscription is ready for deliveries. A synchronous read where this process
   * reads, so that a commit's wake can go without a pass (a round trip to the writer and a write transaction).
   * Only where commits place their events and this process runs the passes; elsewhere absent (always a pass).
   */
  passIdle?(): boolean;
  /**
   * Calls `listener` when another process sequenced events (PostgreSQL: LISTEN/NOTIFY); returns its removal.
   * Passes in this process are reported by the sequencer itself.
   */
  watch(listener: () => void): () => void;
}

/** Events one pass places at most. */
export const POSITIONS_PER_PASS = 1_000;

/**
 * The rows a byte-bounded read returns (engines write it in SQL over the payloads' byte lengths): those whose
 * payloads before them total under `maxBytes`, and at least two, so that a page that the budget cuts after its
 * first event still shows that more follow. When the budget cut the read, a page of at most `maxBytes` of JSON
 * made from the rows (an event is its payload and more) never holds the last of them: rows left over after the
 * page say that more follow, as the extra row of `limit` + 1 does.
 */
export const READ_AT_LEAST = 2;
/** No byte bound: the largest number a driver takes as an integer parameter. */
export const UNBOUNDED_BYTES = Number.MAX_SAFE_INTEGER;

/**
 * Deliveries are made per subscription, from its own cursor into the log, and only while it has room: a
 * subscription holds at most MAX_PENDING_PER_SUBSCRIPTION pending deliveries, and one whose receiver is slow or
 * down is left out of the passes (not ready) until one of its deliveries settles. So a write costs the writer
 * nothing per subscription that cannot take more, and a pass makes at most `maxDeliveries` rows, spread over
 * at most SUBSCRIPTIONS_PER_PASS subscriptions, the furthest behind first.
 */
export const MAX_PENDING_PER_SUBSCRIPTION = 64;
export const SUBSCRIPTIONS_PER_PASS = 16;
/** Events one pass looks at per subscription at most (those of other types are stepped over). */
export const SCAN_PER_SUBSCRIPTION = 4_096;

/** Deliveries one pass makes for one subscription: its share of the budget, within its room. */
export function deliveriesFor(maxDeliveries: number, pending: number): number {
  const share = Math.max(1, Math.floor(maxDeliveries / SUBSCRIPTIONS_PER_PASS));
  return Math.max(0, Math.min(share, MAX_PENDING_PER_SUBSCRIPTION - pending));
}

/** The last position a pass looks at for a subscription whose cursor is at `cursor`. */
export function scanEnd(cursor: bigint, last: bigint): bigint {
  const end = cursor + BigInt(SCAN_PER_SUBSCRIPTION);
  return end < last ? end : last;
}

/**
 * Where a subscription's cursor goes after a pass gave it `made` deliveries of the `room` it had, the last at
 * `lastMade`: past everything it looked at when it took fewer than its room, else to the last event it got.
 */
export function nextCursor(cursor: bigint, last: bigint, room: number, made: number, lastMade: bigint | null): bigint {
  return made < room || lastMade === null ? scanEnd(cursor, last) : lastMade;
}

/**
 * How far around a restore's window an event id's time may fall and still be taken for an event the restore
 * discarded: an event's id takes its time before its commit (a backup may miss an event older than its newest
 * one), and instances' clocks differ a little.
 */
export const RESTORE_WINDOW_SLACK_MS = 5 * 60_000;

/**
 * An `after` that names no event. `restored` (410): its id was made between a restored backup's newest event and
 * the restore, so it may name an event the restore discarded (an id made at another time, such as a made-up
 * one, is not taken for one). Else `gone` (410) once retention has removed events, which it may have been; else
 * `unknown` (400). `createdAt` is the time the id carries (events/event.ts eventIdTime).
 */
export function unknownCursor(
  cursor: { removedThrough: bigint; restores: readonly RestoredLog[] },
  createdAt: number,
): { kind: 'restored'; restore: RestoredLog } | { kind: 'gone' } | { kind: 'unknown' } {
  for (const restore of cursor.restores) {
    const from = restore.newestEventAt === null ? -Infinity : restore.newestEventAt.getTime() - RESTORE_WINDOW_SLACK_MS;
    if (createdAt > from && createdAt <= restore.restoredAt.getTime() + RESTORE_WINDOW_SLACK_MS) return { kind: 'restored', restore };
  }
  return cursor.removedThrough > 0n ? { kind: 'gone' } : { kind: 'unknown' };
}
