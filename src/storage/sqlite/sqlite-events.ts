// The events feed on SQLite: reads on the main connection; the passes (event-jobs.ts) where plant batches commit.
import type Database from 'better-sqlite3';
import { filterShape, READ_AT_LEAST, UNBOUNDED_BYTES, type Cursor, type EventFilter, type EventLogStore, type FeedEvent, type SequencePass } from '../../events/event-log.js';

type Guard = <T>(fn: () => T) => T;

/** Where the passes run: the write worker, or this thread for an in-memory database. */
export interface EventPassRunner {
  sequence(maxDeliveries: number, now: number): Promise<SequencePass>;
  removeOlderThan(cutoff: number, maxEvents: number): Promise<number>;
}

interface EventRow {
  id: string;
  type: string;
  created_at: number;
  payload: string;
  position: bigint;
  trace_context: string | null;
}

export class SqliteEventStore implements EventLogStore {
  private prepared?: ReturnType<SqliteEventStore['prepare']>;
  /** The filtered reads, prepared on first use. */
  private readonly filtered: Partial<Record<'t' | 'p' | 'tp', Database.Statement>> = {};
  readonly passIdle?: () => boolean;

  constructor(
    private readonly db: Database.Database,
    private readonly guard: Guard,
    private readonly passes: EventPassRunner,
    /** Where another process's passes are heard of (a shared writer); none when this process runs them. */
    private readonly placedElsewhere?: (listener: () => void) => () => void,
  ) {
    // A process whose passes run elsewhere (a shared writer's) has none to skip.
    if (!placedElsewhere) this.passIdle = () => this.guard(() => this.statements().passIdle.get() === 1);
  }

  private prepare() {
    const db = this.db;
    return {
      positionOf: db.prepare('SELECT position FROM webhook_events WHERE id = ?').safeIntegers(true),
      removedThrough: db.prepare('SELECT removed_through FROM event_log WHERE id = 1').pluck().safeIntegers(true),
      lastPosition: db.prepare('SELECT last_position FROM event_log WHERE id = 1').pluck().safeIntegers(true),
      restores: db.prepare('SELECT restored_at, newest_event_at FROM store_restores ORDER BY restored_at DESC'),
      unplaced: db.prepare('SELECT count(*) FROM webhook_events WHERE position IS NULL').pluck(),
      behind: db
        .prepare(`SELECT coalesce((SELECT last_position FROM event_log WHERE id = 1) - min(fanned_through), 0)
          FROM webhook_subscriptions WHERE disabled_at IS NULL`)
        .pluck(),
      // The byte rule (event-log.ts) over octet_length, which reads the length from the record, not the payload.
      readAfter: readAfterStatement(db, ''),
      // Two index lookups (webhook_events_position, the partial webhook_subscriptions_fan_out).
      passIdle: db
        .prepare(`SELECT NOT EXISTS (SELECT 1 FROM webhook_events WHERE position IS NULL)
          AND NOT EXISTS (SELECT 1 FROM webhook_subscriptions WHERE fan_out_ready = 1 AND disabled_at IS NULL)`)
        .pluck(),
    };
  }

  private statements() {
    return (this.prepared ??= this.prepare());
  }

  sequence(maxDeliveries: number, now: Date): Promise<SequencePass> {
    return this.passes.sequence(maxDeliveries, now.getTime());
  }

  removeOlderThan(cutoff: Date, maxEvents: number): Promise<number> {
    return this.passes.removeOlderThan(cutoff.getTime(), maxEvents);
  }

  async cursor(id: string): Promise<Cursor> {
    return this.guard(() => {
      const st = this.statements();
      const row = st.positionOf.get(id) as { position: bigint | null } | undefined;
      if (row) return row.position === null ? { kind: 'pending' } : { kind: 'at', position: row.position };
      const restores = (st.restores.all() as { restored_at: number; newest_event_at: number | null }[]).map((r) => ({
        restoredAt: new Date(r.restored_at),
        newestEventAt: r.newest_event_at === null ? null : new Date(r.newest_event_at),
      }));
      return { kind: 'unknown', removedThrough: st.removedThrough.get() as bigint, restores };
    });
  }

  async readAfter(position: bigint | null, limit: number, maxBytes = UNBOUNDED_BYTES, filter?: EventFilter): Promise<FeedEvent[]> {
    const shape = filterShape(filter);
    const rows = this.guard(() => {
      const st = shape === '' ? this.statements().readAfter : (this.filtered[shape] ??= readAfterStatement(this.db, shape));
      return st.all({
        after: position ?? -1n,
        limit,
        maxBytes,
        ...(filter?.types && { types: JSON.stringify(filter.types) }),
        ...(filter?.plant !== undefined && { plant: filter.plant }),
      });
    }) as EventRow[];
    return rows.map((r) => ({ id: r.id, type: r.type, createdAt: new Date(Number(r.created_at)), payload: r.payload, position: r.position, ...(r.trace_context ? { trace: r.trace_context } : {}) }));
  }


  async lastPosition(): Promise<bigint> {
    return this.guard(() => this.statements().lastPosition.get() as bigint);
  }

  async backlog(): Promise<{ unplaced: number; behind: number }> {
    return this.guard(() => {
      const st = this.statements();
      return { unplaced: st.unplaced.get() as number, behind: st.behind.get() as number };
    });
  }

  watch(listener: () => void): () => void {
    // Without a shared writer this process runs every pass, and its own sequencer reports them.
    return this.placedElsewhere?.(listener) ?? (() => {});
  }
}

/**
 * The feed's read after a position: the byte rule (event-log.ts) over octet_length, which reads the length from
 * the record, not the payload; a filter's conditions in both of its scans (`t`: @types, a JSON array; `p`:
 * @plant, through webhook_events_plant).
 */
export function readAfterStatement(db: Database.Database, shape: '' | 't' | 'p' | 'tp') {
  const kept = `${shape.includes('t') ? ' AND type IN (SELECT value FROM json_each(@types))' : ''}${shape.includes('p') ? ' AND plant_id = @plant' : ''}`;
  return db
    .prepare(`WITH sized AS (SELECT position, octet_length(payload) AS bytes FROM webhook_events WHERE position > @after${kept} ORDER BY position LIMIT +@limit),
        last AS (SELECT max(position) AS position FROM (
          SELECT position, sum(bytes) OVER w - bytes AS before, row_number() OVER w AS n FROM sized
          WINDOW w AS (ORDER BY position ROWS UNBOUNDED PRECEDING))
          WHERE before < @maxBytes OR n <= ${READ_AT_LEAST})
      SELECT id, type, created_at, payload, position, trace_context FROM webhook_events
      WHERE position > @after AND position <= (SELECT position FROM last)${kept} ORDER BY position`)
    .safeIntegers(true);
}
