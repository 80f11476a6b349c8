// The event log's writes on SQLite: the statements of the sequencing and retention passes (events/passes.ts
// writes the passes), each pass one IMMEDIATE transaction.
// They run where plant batches commit (the write worker, or the main thread for an in-memory database), so
// they queue behind plant writes instead of contending with them for the lock.
//
// Neither waits for fsync (synchronous=NORMAL for its transaction): a sequencing pass lost to a power failure
// is made again the same way (the same events in the same insertion order, from the same last position),
// and its deliveries with it; a retention pass lost is made again. The next plant commit makes both durable.
import type Database from 'better-sqlite3';
import { MAX_PENDING_PER_SUBSCRIPTION, type SequencePass } from '../../events/event-log.js';
import { PassCounter, retentionBatch, sequencePass, type PassStatements, type ReadySubscription } from '../../events/passes.js';
import { runSteps } from '../../kit/steps.js';

export interface EventJobs {
  sequence(maxDeliveries: number, now: number): SequencePass;
  removeOlderThan(cutoff: number, maxEvents: number): number;
}

/** The passes' statements (events/passes.ts) on one connection; the IMMEDIATE transaction is their lock. */
function passStatements(db: Database.Database): PassStatements {
  const lastPosition = db.prepare('SELECT last_position FROM event_log WHERE id = 1').pluck().safeIntegers(true);
  const unsequenced = db.prepare('SELECT rowid FROM webhook_events WHERE position IS NULL ORDER BY rowid LIMIT +?').pluck().safeIntegers(true);
  const place = db.prepare('UPDATE webhook_events SET position = ? WHERE rowid = ?');
  const setLast = db.prepare('UPDATE event_log SET last_position = ? WHERE id = 1');
  // Served by webhook_subscriptions_fan_out; pending counted up to the most a subscription may hold.
  const ready = db
    .prepare(`SELECT s.id, s.events, s.fanned_through AS cursor,
        (SELECT count(*) FROM (SELECT 1 FROM webhook_deliveries d WHERE d.subscription_id = s.id AND d.status = 'pending' LIMIT ${MAX_PENDING_PER_SUBSCRIPTION})) AS pending
      FROM webhook_subscriptions s WHERE s.fan_out_ready = 1 AND s.disabled_at IS NULL AND s.fanned_through < ? ORDER BY s.fanned_through, s.id LIMIT +?`)
    .safeIntegers(true);
  const chosen = db
    .prepare(`SELECT id, position FROM webhook_events WHERE position > @after AND position <= @through
      AND instr(' ' || @events || ' ', ' ' || type || ' ') > 0 ORDER BY position LIMIT +@max`)
    .safeIntegers(true);
  const insertDelivery = db.prepare(`INSERT INTO webhook_deliveries (id, event_id, subscription_id, status, attempt_count, next_attempt_at, created_at, updated_at)
    VALUES ('dlv_' || lower(hex(randomblob(12))), ?, ?, 'pending', 0, ?, ?, ?)`);
  const moveCursor = db.prepare('UPDATE webhook_subscriptions SET fanned_through = ? WHERE id = ?');
  const notReady = db.prepare('UPDATE webhook_subscriptions SET fan_out_ready = 0 WHERE id = ?');
  const old = db
    .prepare(`SELECT e.id FROM webhook_events e
      WHERE e.created_at < ? AND e.position IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id AND d.status = 'pending')
      ORDER BY e.created_at LIMIT +?`)
    .pluck();
  // The transaction holds the write lock, so no delivery became pending since `old` read them.
  const removeDeliveries = db.prepare('DELETE FROM webhook_deliveries WHERE event_id = ?');
  const removeEvent = db.prepare('DELETE FROM webhook_events WHERE id = ? RETURNING position').pluck().safeIntegers(true);
  const setRemoved = db.prepare('UPDATE event_log SET removed_through = max(removed_through, ?) WHERE id = 1');

  return {
    lockLog: () => lastPosition.get() as bigint,
    place(last, max) {
      const rows = unsequenced.all(max) as bigint[];
      for (const row of rows) place.run(++last, row);
      return rows.length;
    },
    setLast: (last) => void setLast.run(last),
    ready: (last, max) =>
      (ready.all(last, max) as { id: string; events: string; cursor: bigint; pending: bigint }[]).map((s) => ({ ...s, pending: Number(s.pending) }) satisfies ReadySubscription),
    deliver(slice) {
      const events = chosen.all({ after: slice.after, through: slice.through, events: slice.events, max: slice.max }) as { id: string; position: bigint }[];
      const now = slice.now.getTime();
      for (const e of events) insertDelivery.run(e.id, slice.subscription, now, now, now);
      return { made: events.length, last: events.at(-1)?.position ?? null };
    },
    moveCursor: (subscription, cursor) => void moveCursor.run(cursor, subscription),
    notReady: (subscription) => void notReady.run(subscription),
    // Readers of this process hear of it from the sequencer; other processes' through the shared writer.
    notifyPlaced: () => {},
    lockRemoved: () => {},
    old: (cutoff, max) => old.all(cutoff.getTime(), max) as string[],
    remove(ids) {
      const positions: bigint[] = [];
      for (const id of ids) {
        removeDeliveries.run(id);
        const position = removeEvent.get(id) as bigint | undefined;
        if (position !== undefined) positions.push(position);
      }
      return positions;
    },
    setRemoved: (through) => void setRemoved.run(through),
  };
}

export function createEventJobs(db: Database.Database): EventJobs {
  const statements = passStatements(db);
  const counter = new PassCounter();
  const sequence = db.transaction((maxDeliveries: number, now: number) => runSteps(sequencePass(maxDeliveries, new Date(now)), statements));
  const remove = db.transaction((cutoff: number, maxEvents: number) => runSteps(retentionBatch(new Date(cutoff), maxEvents), statements));
  return {
    // Counted only once the pass committed.
    sequence: (maxDeliveries, now) => counter.committed(withoutSync(db, () => sequence.immediate(maxDeliveries, now))),
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
