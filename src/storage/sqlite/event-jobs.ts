// The event log's writes on SQLite: a sequencing pass and a retention pass, each one IMMEDIATE transaction.
// They run where plant batches commit (the write worker, or the main thread for an in-memory database), so
// they queue behind plant writes instead of contending with them for the lock.
//
// Neither waits for fsync (synchronous=NORMAL for its transaction): a sequencing pass lost to a power failure
// is made again the same way (the same events in the same insertion order, from the same last position),
// and its deliveries with it; a retention pass lost is made again. The next plant commit makes both durable.
import type Database from 'better-sqlite3';
import { fanOutPlan, POSITIONS_PER_PASS, type SequencePass } from '../../events/event-log.js';

export interface EventJobs {
  sequence(maxDeliveries: number, now: number): SequencePass;
  removeOlderThan(cutoff: number, maxEvents: number): number;
}

export function createEventJobs(db: Database.Database): EventJobs {
  const activeSubscriptions = db.prepare('SELECT count(*) FROM webhook_subscriptions WHERE disabled_at IS NULL').pluck();
  const state = db
    .prepare('SELECT last_position AS last, fanned_through AS fanned, fanned_subscription AS cursor FROM event_log WHERE id = 1')
    .safeIntegers(true);
  const unsequenced = db.prepare('SELECT rowid FROM webhook_events WHERE position IS NULL ORDER BY rowid LIMIT ?').pluck().safeIntegers(true);
  const place = db.prepare('UPDATE webhook_events SET position = ? WHERE rowid = ?');
  const unfanned = db.prepare('SELECT id, type, position FROM webhook_events WHERE position > ? ORDER BY position LIMIT ?').safeIntegers(true);
  const setState = db.prepare('UPDATE event_log SET last_position = ?, fanned_through = ?, fanned_subscription = ? WHERE id = 1');
  // One delivery per subscription active now that chose the event's type: all of them, or the next slice.
  const chose = `FROM webhook_subscriptions WHERE disabled_at IS NULL AND instr(' ' || events || ' ', ' ' || @type || ' ') > 0`;
  const insert = `INSERT INTO webhook_deliveries (id, event_id, subscription_id, status, attempt_count, next_attempt_at, created_at, updated_at)
    SELECT 'dlv_' || lower(hex(randomblob(12))), @event, id, 'pending', 0, @now, @now, @now`;
  const fanOut = db.prepare(`${insert} ${chose}`);
  const fanOutSlice = db.prepare(`${insert} ${chose} AND id > @after ORDER BY id LIMIT @limit RETURNING subscription_id`).pluck();
  const old = db
    .prepare(`SELECT e.id, e.position FROM webhook_events e
      WHERE e.created_at < ? AND e.position <= (SELECT fanned_through FROM event_log WHERE id = 1)
        AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id AND d.status = 'pending')
      ORDER BY e.created_at LIMIT ?`)
    .safeIntegers(true);
  const removeDeliveries = db.prepare('DELETE FROM webhook_deliveries WHERE event_id = ?');
  const removeEvent = db.prepare('DELETE FROM webhook_events WHERE id = ?');
  const setRemoved = db.prepare('UPDATE event_log SET removed_through = max(removed_through, ?) WHERE id = 1');

  const sequence = db.transaction((maxDeliveries: number, now: number): SequencePass => {
    const was = state.get() as { last: bigint; fanned: bigint; cursor: string | null };
    let { last, fanned, cursor } = was;
    const rows = unsequenced.all(POSITIONS_PER_PASS + 1) as bigint[];
    const placing = Math.min(rows.length, POSITIONS_PER_PASS);
    for (let i = 0; i < placing; i++) place.run(++last, rows[i]);
    let deliveries = 0;
    const plan = fanOutPlan(maxDeliveries, activeSubscriptions.get() as number, cursor);
    if (plan.kind === 'none') {
      // Nobody to deliver to: the events placed so far need nothing more.
      fanned = last;
      cursor = null;
    } else if (plan.kind === 'whole') {
      for (const e of unfanned.all(fanned, plan.events) as { id: string; type: string; position: bigint }[]) {
        deliveries += fanOut.run({ event: e.id, now, type: e.type }).changes;
        fanned = e.position;
      }
    } else {
      const e = unfanned.get(fanned, 1) as { id: string; type: string; position: bigint } | undefined;
      if (e) {
        const made = fanOutSlice.all({ event: e.id, now, type: e.type, after: plan.after, limit: plan.limit }) as string[];
        deliveries = made.length;
        if (made.length < plan.limit) {
          fanned = e.position;
          cursor = null;
        } else {
          cursor = made.reduce((a, b) => (b > a ? b : a));
        }
      }
    }
    if (last !== was.last || fanned !== was.fanned || cursor !== was.cursor) setState.run(last, fanned, cursor);
    return { events: placing, deliveries, more: rows.length > placing || fanned < last };
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
    sequence: (maxDeliveries, now) => withoutSync(db, () => sequence.immediate(maxDeliveries, now)),
    removeOlderThan: (cutoff, maxEvents) => withoutSync(db, () => remove.immediate(cutoff, maxEvents)),
  };
}

/** Runs `fn` with synchronous=NORMAL, then restores the connection's level (better-sqlite3 is synchronous). */
export function withoutSync<T>(db: Database.Database, fn: () => T): T {
  const level = db.pragma('synchronous', { simple: true }) as number;
  if (level <= 1) return fn();
  db.pragma('synchronous = NORMAL');
  try {
    return fn();
  } finally {
    db.pragma(`synchronous = ${level}`);
  }
}
