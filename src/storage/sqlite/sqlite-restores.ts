// The restore record on SQLite (storage/restores.ts): the counter row and the store_restores table, on the
// main connection (a restore runs on a stopped store).
import type Database from 'better-sqlite3';
import type { RestoreRecord, RestoreStore } from '../restores.js';

type Guard = <T>(fn: () => T) => T;

export class SqliteRestoreStore implements RestoreStore {
  constructor(
    private readonly db: Database.Database,
    private readonly guard: Guard,
  ) {}

  async facts(): Promise<{ lastVersion: bigint; newestEventAt: Date | null }> {
    return this.guard(() => {
      const lastVersion = this.db.prepare('SELECT last FROM plant_version_counter').pluck().safeIntegers(true).get() as bigint;
      const newest = this.db.prepare('SELECT max(created_at) FROM webhook_events').pluck().get() as number | null;
      return { lastVersion, newestEventAt: newest === null ? null : new Date(newest) };
    });
  }

  async record(r: RestoreRecord): Promise<void> {
    this.guard(() =>
      this.db.transaction(() => {
        this.db.prepare('UPDATE plant_version_counter SET last = max(last, ?)').run(r.versionsFrom);
        this.db
          .prepare('INSERT INTO store_restores (restored_at, newest_event_at, versions_from) VALUES (?, ?, ?)')
          .run(r.restoredAt.getTime(), r.newestEventAt?.getTime() ?? null, r.versionsFrom);
      }).immediate(),
    );
  }
}
