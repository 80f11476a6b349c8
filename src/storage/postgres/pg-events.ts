// The events feed on PostgreSQL. A sequencing pass locks the event_log row, so passes of every instance take
// turns, and reads in its next statement (a new snapshot under READ COMMITTED) what earlier passes left
// unsequenced; it sees only committed events, so a position is never given before a lower one can still
// appear. It notifies the other instances on commit (NOTIFY), which wake their long-polling readers.
import type pg from 'pg';
import { filterShape, MAX_PENDING_PER_SUBSCRIPTION, READ_AT_LEAST, UNBOUNDED_BYTES, type Cursor, type EventFilter, type EventLogStore, type FeedEvent, type SequencePass } from '../../events/event-log.js';
import { PassCounter, retentionBatch, sequencePass, type AsyncPassStatements } from '../../events/passes.js';
import { runStepsAsync } from '../../kit/steps.js';
import { guarded, pgDriver, transaction } from './pool.js';

const CHANNEL = 'plant_store_events';

const SQL = {
  lock: 'SELECT last_position FROM event_log WHERE id = 1 FOR UPDATE',
  lastPosition: 'SELECT last_position FROM event_log WHERE id = 1',
  // Positions last+1.. in insertion order.
  place: `WITH batch AS (
      SELECT id, $2::int8 + row_number() OVER (ORDER BY seq) AS position FROM webhook_events
      WHERE position IS NULL ORDER BY seq LIMIT $1)
    UPDATE webhook_events e SET position = b.position FROM batch b WHERE e.id = b.id RETURNING e.position`,
  setLast: 'UPDATE event_log SET last_position = $1 WHERE id = 1',
  // The ready subscriptions furthest behind, each with its pending deliveries (counted up to the most it may hold).
  behind: `SELECT s.id, s.events, s.fanned_through AS cursor,
      (SELECT count(*) FROM (SELECT 1 FROM webhook_deliveries d WHERE d.subscription_id = s.id AND d.status = 'pending' LIMIT ${MAX_PENDING_PER_SUBSCRIPTION}) p)::int AS pending
    FROM webhook_subscriptions s WHERE s.fan_out_ready = 1 AND s.disabled_at IS NULL AND s.fanned_through < $1
    ORDER BY s.fanned_through, s.id LIMIT $2`,
  // One subscription's next deliveries: the events after its cursor, up to $3, that it chose, at most $4.
  fanOut: `WITH ev AS (
      SELECT id, position FROM webhook_events WHERE position > $2 AND position <= $3
        AND strpos(' ' || $5 || ' ', ' ' || type || ' ') > 0 ORDER BY position LIMIT $4),
    made AS (
      INSERT INTO webhook_deliveries (id, event_id, subscription_id, status, attempt_count, next_attempt_at, created_at, updated_at)
      SELECT 'dlv_' || substr(md5(random()::text || clock_timestamp()::text || ev.id || $1), 1, 24), ev.id, $1, 'pending', 0, $6, $6, $6
      FROM ev ORDER BY ev.position
      RETURNING 1)
    SELECT (SELECT count(*) FROM made)::int AS made, (SELECT max(position) FROM ev) AS last`,
  moveCursor: 'UPDATE webhook_subscriptions SET fanned_through = $2 WHERE id = $1',
  // Only while still full: a delivery that settled since the count (on another instance) keeps it ready.
  notReady: `UPDATE webhook_subscriptions s SET fan_out_ready = 0 WHERE s.id = $1
    AND (SELECT count(*) FROM (SELECT 1 FROM webhook_deliveries d WHERE d.subscription_id = s.id AND d.status = 'pending' LIMIT ${MAX_PENDING_PER_SUBSCRIPTION}) p) >= ${MAX_PENDING_PER_SUBSCRIPTION}`,
  notify: `SELECT pg_notify('${CHANNEL}', '')`,
  positionOf: 'SELECT position FROM webhook_events WHERE id = $1',
  backlog: `SELECT (SELECT count(*) FROM webhook_events WHERE position IS NULL)::int AS unplaced,
      coalesce((SELECT last_position FROM event_log WHERE id = 1) - (SELECT min(fanned_through) FROM webhook_subscriptions WHERE disabled_at IS NULL), 0) AS behind`,
  removedThrough: 'SELECT removed_through FROM event_log WHERE id = 1',
  restores: 'SELECT restored_at, newest_event_at FROM store_restores ORDER BY restored_at DESC',
  // The byte rule (event-log.ts) over octet_length, which reads no payload (not even one stored compressed).
  readAfter: `WITH sized AS (SELECT position, octet_length(payload) AS bytes FROM webhook_events WHERE position > $1 ORDER BY position LIMIT $2),
      last AS (SELECT max(position) AS position FROM (
        SELECT position, sum(bytes) OVER w - bytes AS before, row_number() OVER w AS n FROM sized
        WINDOW w AS (ORDER BY position ROWS UNBOUNDED PRECEDING)) c
        WHERE before < $3 OR n <= ${READ_AT_LEAST})
    SELECT id, type, created_at, payload, position, trace_context FROM webhook_events
    WHERE position > $1 AND position <= (SELECT position FROM last) ORDER BY position`,
  // The same with a filter's conditions in both scans (a plant's through webhook_events_plant).
  readAfterT: `WITH sized AS (SELECT position, octet_length(payload) AS bytes FROM webhook_events WHERE position > $1 AND type = ANY($4::text[]) ORDER BY position LIMIT $2),
      last AS (SELECT max(position) AS position FROM (
        SELECT position, sum(bytes) OVER w - bytes AS before, row_number() OVER w AS n FROM sized
        WINDOW w AS (ORDER BY position ROWS UNBOUNDED PRECEDING)) c
        WHERE before < $3 OR n <= ${READ_AT_LEAST})
    SELECT id, type, created_at, payload, position, trace_context FROM webhook_events
    WHERE position > $1 AND position <= (SELECT position FROM last) AND type = ANY($4::text[]) ORDER BY position`,
  readAfterP: `WITH sized AS (SELECT position, octet_length(payload) AS bytes FROM webhook_events WHERE position > $1 AND plant_id = $4 ORDER BY position LIMIT $2),
      last AS (SELECT max(position) AS position FROM (
        SELECT position, sum(bytes) OVER w - bytes AS before, row_number() OVER w AS n FROM sized
        WINDOW w AS (ORDER BY position ROWS UNBOUNDED PRECEDING)) c
        WHERE before < $3 OR n <= ${READ_AT_LEAST})
    SELECT id, type, created_at, payload, position, trace_context FROM webhook_events
    WHERE position > $1 AND position <= (SELECT position FROM last) AND plant_id = $4 ORDER BY position`,
  readAfterTP: `WITH sized AS (SELECT position, octet_length(payload) AS bytes FROM webhook_events WHERE position > $1 AND type = ANY($4::text[]) AND plant_id = $5 ORDER BY position LIMIT $2),
      last AS (SELECT max(position) AS position FROM (
        SELECT position, sum(bytes) OVER w - bytes AS before, row_number() OVER w AS n FROM sized
        WINDOW w AS (ORDER BY position ROWS UNBOUNDED PRECEDING)) c
        WHERE before < $3 OR n <= ${READ_AT_LEAST})
    SELECT id, type, created_at, payload, position, trace_context FROM webhook_events
    WHERE position > $1 AND position <= (SELECT position FROM last) AND type = ANY($4::text[]) AND plant_id = $5 ORDER BY position`,
  lockRemoved: 'SELECT removed_through FROM event_log WHERE id = 1 FOR UPDATE',
  old: `SELECT e.id FROM webhook_events e
    WHERE e.created_at < $1 AND e.position IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id AND d.status = 'pending')
    ORDER BY e.created_at LIMIT $2`,
  // A delivery made pending again meanwhile (a manual retry) keeps itself and its event.
  removeDeliveries: `DELETE FROM webhook_deliveries WHERE event_id = ANY($1::text[]) AND status <> 'pending'`,
  removeEvents: `DELETE FROM webhook_events e WHERE e.id = ANY($1::text[])
    AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id) RETURNING e.position`,
  setRemoved: 'UPDATE event_log SET removed_through = greatest(removed_through, $1) WHERE id = 1',
} as const;

/** The feed's read of a filter's shape (test/events/event-filters.test.ts explains it). */
const READ_AFTER = { '': 'readAfter', t: 'readAfterT', p: 'readAfterP', tp: 'readAfterTP' } as const;

/** The feed's read of a filter's shape (test/events/event-filters.test.ts explains it). */
export function readAfterSql(shape: '' | 't' | 'p' | 'tp'): string {
  return SQL[READ_AFTER[shape]];
}

function named(name: keyof typeof SQL, values: unknown[]): pg.QueryConfig {
  return { name: `events_${name}`, text: SQL[name], values };
}

/**
 * The passes' statements (events/passes.ts) on one transaction's client. The `event_log` row lock, then new
 * statements: each sees, under READ COMMITTED, what passes before this one committed.
 */
function passStatements(client: pg.PoolClient): AsyncPassStatements {
  const query = <R extends pg.QueryResultRow>(name: keyof typeof SQL, values: unknown[]) => client.query<R>(named(name, values)).then((r) => r.rows);
  return {
    lockLog: async () => (await query<{ last_position: bigint }>('lock', []))[0]!.last_position,
    place: async (last, max) => (await query('place', [max, last.toString()])).length,
    setLast: async (last) => void (await query('setLast', [last.toString()])),
    ready: (last, max) => query<{ id: string; events: string; cursor: bigint; pending: number }>('behind', [last.toString(), max]),
    deliver: async (slice) => {
      const [made] = await query<{ made: number; last: bigint | null }>('fanOut', [slice.subscription, slice.after.toString(), slice.through.toString(), slice.max, slice.events, slice.now]);
      return made!;
    },
    moveCursor: async (subscription, cursor) => void (await query('moveCursor', [subscription, cursor.toString()])),
    notReady: async (subscription) => void (await query('notReady', [subscription])),
    notifyPlaced: async () => void (await query('notify', [])),
    lockRemoved: async () => void (await query('lockRemoved', [])),
    old: async (cutoff, max) => (await query<{ id: string }>('old', [cutoff, max])).map((r) => r.id),
    remove: async (ids) => {
      await query('removeDeliveries', [ids]);
      return (await query<{ position: bigint }>('removeEvents', [ids])).map((r) => r.position);
    },
    setRemoved: async (through) => void (await query('setRemoved', [through.toString()])),
  };
}

interface EventRow {
  id: string;
  type: string;
  created_at: Date;
  payload: string;
  position: bigint;
  trace_context: string | null;
}

export class PgEventStore implements EventLogStore {
  private readonly listeners = new Set<() => void>();
  private listening?: pg.Client;
  private retry?: NodeJS.Timeout;
  private stopped = false;
  private readonly counter = new PassCounter();

  constructor(
    private readonly pool: pg.Pool,
    private readonly url: string,
    private readonly closed: () => boolean,
    private readonly connectTimeoutMs = 5_000,
    /** The LISTEN connection's application_name (pg-servers.ts: a server's says its keys). */
    private readonly listenerName = 'plant-store events',
  ) {}

  private guard<T>(fn: () => Promise<T>): Promise<T> {
    return guarded(this.closed, fn);
  }

  sequence(maxDeliveries: number, now: Date): Promise<SequencePass> {
    return this.guard(async () =>
      this.counter.committed(await transaction(this.pool, (client) => runStepsAsync(sequencePass(maxDeliveries, now), passStatements(client)))),
    );
  }

  cursor(id: string): Promise<Cursor> {
    return this.guard(async () => {
      const { rows } = await this.pool.query<{ position: bigint | null }>(named('positionOf', [id]));
      if (rows[0]) return rows[0].position === null ? { kind: 'pending' } : { kind: 'at', position: rows[0].position };
      const removed = await this.pool.query<{ removed_through: bigint }>(named('removedThrough', []));
      const restores = await this.pool.query<{ restored_at: Date; newest_event_at: Date | null }>(named('restores', []));
      return {
        kind: 'unknown',
        removedThrough: removed.rows[0]?.removed_through ?? 0n,
        restores: restores.rows.map((r) => ({ restoredAt: r.restored_at, newestEventAt: r.newest_event_at })),
      };
    });
  }

  readAfter(position: bigint | null, limit: number, maxBytes = UNBOUNDED_BYTES, filter?: EventFilter): Promise<FeedEvent[]> {
    const name = READ_AFTER[filterShape(filter)];
    const values: unknown[] = [(position ?? -1n).toString(), limit, maxBytes];
    if (filter?.types) values.push([...filter.types]);
    if (filter?.plant !== undefined) values.push(filter.plant.toString());
    return this.guard(async () => {
      const { rows } = await this.pool.query<EventRow>(named(name, values));
      return rows.map((r) => ({ id: r.id, type: r.type, createdAt: r.created_at, payload: r.payload, position: r.position, ...(r.trace_context ? { trace: r.trace_context } : {}) }));
    });
  }


  removeOlderThan(cutoff: Date, maxEvents: number): Promise<number> {
    return this.guard(() => transaction(this.pool, (client) => runStepsAsync(retentionBatch(cutoff, maxEvents), passStatements(client))));
  }

  lastPosition(): Promise<bigint> {
    return this.guard(async () => (await this.pool.query<{ last_position: bigint }>(named('lastPosition', []))).rows[0]!.last_position);
  }

  backlog(): Promise<{ unplaced: number; behind: number }> {
    return this.guard(async () => {
      const { rows: [row] } = await this.pool.query<{ unplaced: number; behind: bigint }>(named('backlog', []));
      return { unplaced: row!.unplaced, behind: Number(row!.behind) };
    });
  }

  watch(listener: () => void): () => void {
    this.listeners.add(listener);
    if (!this.listening && !this.retry) this.listen(0);
    return () => {
      this.listeners.delete(listener);
    };
  }

  /** One connection per instance LISTENs; a lost one is opened again with back-off while anyone watches. */
  private listen(failures: number): void {
    this.retry = undefined;
    if (this.stopped || this.listeners.size === 0) return;
    const client = new (pgDriver().Client)({ connectionString: this.url, application_name: this.listenerName, keepAlive: true, connectionTimeoutMillis: this.connectTimeoutMs });
    this.listening = client;
    let lost = false;
    const again = () => {
      if (lost) return;
      lost = true;
      if (this.listening === client) this.listening = undefined;
      client.end().catch(() => {});
      if (this.stopped) return;
      // Events sequenced while no one listened are found by the readers' own timeouts and the sequencer's poll.
      // At most 5 s apart: after a failover this instance hears the others again within seconds of the new
      // primary being reachable (a LISTEN on a standby fails, 25006, and is tried again like a lost connection).
      this.retry = setTimeout(() => this.listen(failures + 1), Math.min(5_000, 250 * 2 ** failures));
      this.retry.unref();
    };
    client.on('error', again);
    client.on('end', again);
    client.on('notification', () => {
      for (const l of this.listeners) l();
    });
    client
      .connect()
      .then(() => client.query(`LISTEN ${CHANNEL}`))
      .then(() => {
        failures = 0;
        // Anything sequenced before LISTEN took effect: readers look again.
        for (const l of this.listeners) l();
      })
      .catch(again);
  }

  async close(): Promise<void> {
    this.stopped = true;
    if (this.retry) clearTimeout(this.retry);
    const client = this.listening;
    this.listening = undefined;
    await client?.end().catch(() => {});
  }
}
