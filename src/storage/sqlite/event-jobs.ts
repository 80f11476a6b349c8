// The event log's writes on SQLite: a sequencing pass and a retention pass, each one IMMEDIATE transaction.
// They run where plant batches commit (the write worker, or the main thread for an in-memory database), so
// they queue behind plant writes instead of contending with them for the lock.
//
// Neither waits for fsync (synchronous=NORMAL for its transaction): a sequencing pass lost to a power failure
// is made again the same way (the same events in the same insertion order, from the same last position),
// and its deliveries with it; a retention pass lost is made again. The next plant commit makes both durable.
import type Database from 'better-sqlite3';
import { deliveriesFor, MAX_PENDING_PER_SUBSCRIPTION, nextCursor, POSITIONS_PER_PASS, scanEnd, SUBSCRIPTIONS_PER_PASS, type SequencePass } from '../../events/event-log.js';

export interface EventJobs {
  sequence(maxDeliveries: number, now: number): SequencePass;
  removeOlderThan(cutoff: number, maxEvents: number): number;
}

export function createEventJobs(db: Database.Database): EventJobs {
  const lastPosition = db.prepare('SELECT last_position FROM event_log WHERE id = 1').pluck().safeIntegers(true);
  const unsequenced = db.prepare('SELECT rowid FROM webhook_events WHERE position IS NULL ORDER BY rowid LIMIT ?').pluck().safeIntegers(true);
  const place = db.prepare('UPDATE webhook_events SET position = ? WHERE rowid = ?');
  const setLast = db.prepare('UPDATE event_log SET last_position = ? WHERE id = 1');
  // The ready subscriptions furthest behind (served by webhook_subscriptions_fan_out).
  const behind = db
    .prepare(`SELECT id, events, fanned_through AS cursor FROM webhook_subscriptions
      WHERE fan_out_ready = 1 AND disabled_at IS NULL AND fanned_through < ? ORDER BY fanned_through, id LIMIT ?`)
    .safeIntegers(true);
  const pendingOf = db
    .prepare(`SELECT count(*) FROM (SELECT 1 FROM webhook_deliveries WHERE subscription_id = ? AND status = 'pending' LIMIT ${MAX_PENDING_PER_SUBSCRIPTION})`)
    .pluck();
  const chosen = db
    .prepare(`SELECT id, position FROM webhook_events WHERE position > @cursor AND position <= @until
      AND instr(' ' || @events || ' ', ' ' || type || ' ') > 0 ORDER BY position LIMIT @room`)
    .safeIntegers(true);
  const insertDelivery = db.prepare(`INSERT INTO webhook_deliveries (id, event_id, subscription_id, status, attempt_count, next_attempt_at, created_at, updated_at)
    VALUES ('dlv_' || lower(hex(randomblob(12))), ?, ?, 'pending', 0, ?, ?, ?)`);
  const moveCursor = db.prepare('UPDATE webhook_subscriptions SET fanned_through = ? WHERE id = ?');
  const notReady = db.prepare('UPDATE webhook_subscriptions SET fan_out_ready = 0 WHERE id = ?');
  const old = db
    .prepare(`SELECT e.id, e.position FROM webhook_events e
      WHERE e.created_at < ? AND e.position IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id AND d.status = 'pending')
      ORDER BY e.created_at LIMIT ?`)
    .safeIntegers(true);
  const removeDeliveries = db.prepare('DELETE FROM webhook_deliveries WHERE event_id = ?');
  const removeEvent = db.prepare('DELETE FROM webhook_events WHERE id = ?');
  const setRemoved = db.prepare('UPDATE event_log SET removed_through = max(removed_through, ?) WHERE id = 1');

  // Commits place their events themselves (plant-batch.ts); a pass places only events written without a
  // position (by an older version), and reports every event that joined the feed since the previous pass.
  let seenThrough = 0n;
  let passSeen = 0n;
  const sequence = db.transaction((maxDeliveries: number, now: number): SequencePass => {
    let last = lastPosition.get() as bigint;
    const rows = unsequenced.all(POSITIONS_PER_PASS + 1) as bigint[];
    const placing = Math.min(rows.length, POSITIONS_PER_PASS);
    for (let i = 0; i < placing; i++) place.run(++last, rows[i]);
    if (placing > 0) setLast.run(last);
    const joined = Number(last - seenThrough);
    passSeen = last;
    let deliveries = 0;
    let behindAfter = false;
    const subs = behind.all(last, SUBSCRIPTIONS_PER_PASS) as { id: string; events: string; cursor: bigint }[];
    for (const sub of subs) {
      const room = deliveriesFor(maxDeliveries, pendingOf.get(sub.id) as number);
      if (room === 0) {
        // Full: left out until one of its deliveries settles.
        notReady.run(sub.id);
        continue;
      }
      const events = chosen.all({ cursor: sub.cursor, until: scanEnd(sub.cursor, last), events: sub.events, room }) as { id: string; position: bigint }[];
      for (const e of events) insertDelivery.run(e.id, sub.id, now, now, now);
      deliveries += events.length;
      const cursor = nextCursor(sub.cursor, last, room, events.length, events.at(-1)?.position ?? null);
      moveCursor.run(cursor, sub.id);
      if (cursor < last) behindAfter = true;
    }
    return { events: joined, deliveries, more: rows.length > placing || subs.length === SUBSCRIPTIONS_PER_PASS || behindAfter };
  });

  const remove = db.transaction((cutoff: number, maxEvents: number): number => {
    const rows = old.all(cutoff, maxEvents) as { id: string; position: bigint }[];
    let through = 0n;
    for (const row of rows) {
      removeDeliveries.run(row.id);
      removeEvent.run(row.id);
      if (row.position > through) through = row.position;
    }
    if (rows.length > 0) setRemoved.run(through);
    return rows.length;
  });

  return {
    sequence: (maxDeliveries, now) => {
      const pass = withoutSync(db, () => sequence.immediate(maxDeliveries, now));
      // Only once the pass committed: one rolled back leaves its events to be reported by the next.
      seenThrough = passSeen;
      return pass;
    },
    removeOlderThan: (cutoff, maxEvents) => withoutSync(db, () => remove.immediate(cutoff, maxEvents)),
  };
}

// Each connection's own level (FULL), read once: it never changes afterwards.
const levels = new WeakMap<Database.Database, number>();

/** Runs `fn` with synchronous=NORMAL, then restores the connection's level (better-sqlite3 is synchronous). */
export function withoutSync<T>(db: Database.Database, fn: () => T): T {
  let level = levels.get(db);
  if (level === undefined) levels.set(db, (level = db.pragma('synchronous', { simple: true }) as number));
  if (level <= 1) return fn();
  db.pragma('synchronous = NORMAL');
  try {
    return fn();
  } finally {
    db.pragma(`synchronous = ${level}`);
  }
}
