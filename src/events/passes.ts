// The sequencing pass and the retention pass, written once over a small port of statements that each engine
// implements (`PassStatements`), as steps (src/kit/steps.ts): SQLite runs them inside its IMMEDIATE transaction,
// PostgreSQL awaits each on its transaction's client.
import { statementsOf, type AsyncStatements, type Steps } from '../kit/steps.js';
import { deliveriesFor, nextCursor, POSITIONS_PER_PASS, scanEnd, SUBSCRIPTIONS_PER_PASS, type SequencePass } from './event-log.js';

/** An active subscription ready for deliveries, as a pass reads it. */
export interface ReadySubscription {
  id: string;
  /** The event types it chose, separated by spaces. */
  events: string;
  /** The last log position it has its deliveries for (`fanned_through`). */
  cursor: bigint;
  /** Its pending deliveries, counted up to MAX_PENDING_PER_SUBSCRIPTION. */
  pending: number;
}

/** One subscription's slice of deliveries to make. */
export interface DeliverySlice {
  subscription: string;
  events: string;
  /** Events after this position... */
  after: bigint;
  /** ...up to this one, of the types it chose, at most `max`, in position order. */
  through: bigint;
  max: number;
  now: Date;
}

/** The statements a pass runs, in the engine's transaction. */
export interface PassStatements {
  /** The log's last position; PostgreSQL locks the `event_log` row here, so passes of every instance take turns. */
  lockLog(): bigint;
  /** Gives up to `max` of the oldest committed events without a position the positions after `last`; how many. */
  place(last: bigint, max: number): number;
  setLast(last: bigint): void;
  /** Up to `max` ready active subscriptions whose cursor is before `last`, the furthest behind first. */
  ready(last: bigint, max: number): ReadySubscription[];
  /** Makes a slice of deliveries: how many, and the position of the last one's event (null when none). */
  deliver(slice: DeliverySlice): { made: number; last: bigint | null };
  moveCursor(subscription: string, cursor: bigint): void;
  /** Leaves a full subscription out of the passes until one of its deliveries settles. */
  notReady(subscription: string): void;
  /** The pass placed events (PostgreSQL: NOTIFY on commit, which wakes other instances' readers). */
  notifyPlaced(): void;
  /** Retention's turn (PostgreSQL locks the `event_log` row). */
  lockRemoved(): void;
  /** Up to `max` events created before `cutoff`, already placed and with no pending delivery, the oldest first. */
  old(cutoff: Date, max: number): string[];
  /** Removes these events with their settled deliveries (one made pending again meanwhile keeps its event); the positions removed. */
  remove(ids: string[]): bigint[];
  setRemoved(through: bigint): void;
}

/** The same statements, each awaited (an engine whose driver is asynchronous). */
export type AsyncPassStatements = AsyncStatements<PassStatements>;

const run = statementsOf<PassStatements>();

/** What one sequencing pass did, before its commit. */
export interface PassResult {
  /** The log's last position after the pass. */
  last: bigint;
  deliveries: number;
  more: boolean;
}

/**
 * One sequencing pass: places up to POSITIONS_PER_PASS committed events, then for up to SUBSCRIPTIONS_PER_PASS
 * ready subscriptions, the furthest behind first, makes the deliveries of the events after each one's cursor
 * that it chose, within its room (deliveriesFor, scanEnd, nextCursor); a subscription without room is marked
 * not ready. `more` when it stopped at a bound: events left to place, subscriptions left to serve, or one
 * still behind the log's end.
 */
export function* sequencePass(maxDeliveries: number, now: Date): Steps<PassStatements, PassResult> {
  let last = yield* run('lockLog');
  const placed = yield* run('place', last, POSITIONS_PER_PASS);
  if (placed > 0) {
    last += BigInt(placed);
    yield* run('setLast', last);
  }
  let deliveries = 0;
  let behindAfter = false;
  const subs = yield* run('ready', last, SUBSCRIPTIONS_PER_PASS);
  for (const sub of subs) {
    const room = deliveriesFor(maxDeliveries, sub.pending);
    if (room === 0) {
      yield* run('notReady', sub.id);
      continue;
    }
    const made = yield* run('deliver', { subscription: sub.id, events: sub.events, after: sub.cursor, through: scanEnd(sub.cursor, last), max: room, now });
    deliveries += made.made;
    const cursor = nextCursor(sub.cursor, last, room, made.made, made.last);
    yield* run('moveCursor', sub.id, cursor);
    if (cursor < last) behindAfter = true;
  }
  if (placed > 0) yield* run('notifyPlaced');
  return { last, deliveries, more: placed === POSITIONS_PER_PASS || subs.length === SUBSCRIPTIONS_PER_PASS || behindAfter };
}

/**
 * One retention batch: removes up to `max` events created before `cutoff` whose deliveries are all settled,
 * with those deliveries, and moves `removed_through` up to the last position removed; how many it removed.
 * The sequencer repeats it while a batch comes back full.
 */
export function* retentionBatch(cutoff: Date, max: number): Steps<PassStatements, number> {
  yield* run('lockRemoved');
  const ids = yield* run('old', cutoff, max);
  if (ids.length === 0) return 0;
  const removed = yield* run('remove', ids);
  if (removed.length > 0) yield* run('setRemoved', removed.reduce((m, p) => (p > m ? p : m), 0n));
  return removed.length;
}

/**
 * Counts what joined the feed between one process's passes: the events its passes placed, and (where commits
 * place their own events) those its commits placed. Told only of committed passes, so one rolled back leaves
 * its events to be reported by the next.
 */
export class PassCounter {
  private seenThrough = 0n;

  committed(pass: PassResult): SequencePass {
    const events = pass.last > this.seenThrough ? Number(pass.last - this.seenThrough) : 0;
    this.seenThrough = pass.last;
    return { events, deliveries: pass.deliveries, more: pass.more };
  }
}
