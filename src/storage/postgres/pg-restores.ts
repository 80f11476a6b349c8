// The restore record on PostgreSQL (storage/restores.ts): the plant_versions sequence and the store_restores
// table. setval is not transactional, but it only moves the sequence up, which is safe to repeat.
import type pg from 'pg';
import type { RestoreRecord, RestoreStore } from '../restores.js';
import { guarded, transaction } from './pool.js';

export class PgRestoreStore implements RestoreStore {
  constructor(
    private readonly pool: pg.Pool,
    private readonly closed: () => boolean,
  ) {}

  facts(): Promise<{ lastVersion: bigint; newestEventAt: Date | null }> {
    return guarded(this.closed, async () => {
      const { rows } = await this.pool.query<{ last: bigint; newest: Date | null }>(
        'SELECT (SELECT last_value FROM plant_versions) AS last, (SELECT max(created_at) FROM webhook_events) AS newest',
      );
      return { lastVersion: rows[0]!.last, newestEventAt: rows[0]!.newest };
    });
  }

  record(r: RestoreRecord): Promise<void> {
    return guarded(this.closed, () =>
      transaction(this.pool, async (client) => {
        await client.query("SELECT setval('plant_versions', greatest((SELECT last_value FROM plant_versions), $1::int8))", [r.versionsFrom.toString()]);
        await client.query('INSERT INTO store_restores (restored_at, newest_event_at, versions_from) VALUES ($1, $2, $3)', [
          r.restoredAt,
          r.newestEventAt,
          r.versionsFrom.toString(),
        ]);
      }),
    );
  }
}
