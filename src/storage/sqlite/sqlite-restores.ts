// The restore record on SQLite (storage/restores.ts): the facts read on this connection, the record written by
// the store's writer (write-commands.ts recordRestore). A restore runs on a stopped store.
import type Database from 'better-sqlite3';
import type { RestoreRecord, RestoreStore } from '../restores.js';
import type { Write } from './write-commands.js';

type Guard = <T>(fn: () => T) => T;

export class SqliteRestoreStore implements RestoreStore {
  constructor(
    private readonly db: Database.Database,
    private readonly guard: Guard,
    private readonly write: Write,
  ) {}

  async facts(): Promise<{ lastVersion: bigint; newestEventAt: Date | null }> {
    return this.guard(() => {
      const lastVersion = this.db.prepare('SELECT last FROM plant_version_counter').pluck().safeIntegers(true).get() as bigint;
      const newest = this.db.prepare('SELECT max(created_at) FROM webhook_events').pluck().get() as number | null;
      return { lastVersion, newestEventAt: newest === null ? null : new Date(newest) };
    });
  }

  record(r: RestoreRecord): Promise<void> {
    return this.write('recordRestore', r);
  }
}
