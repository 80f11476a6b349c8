// SQLite's side of migrating (storage/migrator.ts): the history table, each migration in its own IMMEDIATE
// transaction, and the ports the history's data steps run over (storage/schema-history.ts).
import type Database from 'better-sqlite3';
import type { MigrationAdapter } from '../migrator.js';
import type { FoldedNamesPort } from '../folded-names.js';
import type { HistoryPorts } from '../schema-history.js';

/** SQLite needs no lock around the run: each migration is decided again under the write lock (IMMEDIATE). */
export function migrationAdapter(db: Database.Database): MigrationAdapter<HistoryPorts> {
  return {
    locked: (run) => run(),
    ensureHistory: async () => {
      db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT');
    },
    appliedVersions: async () => new Set(db.prepare('SELECT version FROM schema_migrations').pluck().all() as number[]),
    // Another process (a second instance, or `token create` at the same first start) may have applied it since.
    apply: async (m) =>
      db.transaction((): 'applied' | 'already-applied' => {
        if (db.prepare('SELECT 1 FROM schema_migrations WHERE version = ?').get(m.version)) return 'already-applied';
        db.exec(m.sql);
        db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(m.version, m.name, Date.now());
        return 'applied';
      }).immediate(),
    ports: { foldedNames: foldedNamesPort(db) },
  };
}

/**
 * The folded names on this connection, every one filled in SQL: an ASCII name by SQLite's lower() (it maps A-Z
 * only), any other by the fold itself, registered on this connection as a SQL function (a thousand plants a
 * transaction read and written from JavaScript took 75 µs a plant).
 */
function foldedNamesPort(db: Database.Database): FoldedNamesPort {
  let fill: Database.Statement | undefined;
  return {
    lastUnfilled: async (after, limit) =>
      (db.prepare('SELECT max(id) FROM (SELECT id FROM plants WHERE name_folded IS NULL AND id > ? ORDER BY id LIMIT ?)').pluck().safeIntegers(true).get(after, limit) as bigint | null) ?? undefined,
    fillInDatabase: async (after, last, fold) => {
      if (!fill) {
        db.function('plant_store_fold', { deterministic: true }, (name: unknown) => fold(name as string));
        // The byte length equals the length in characters exactly when every character is ASCII (length() of a
        // text stops at a U+0000, so such a name is folded by the fold, which reads it whole).
        fill = db.prepare(`UPDATE plants SET name_folded = CASE WHEN length(CAST(name AS BLOB)) = length(name) THEN lower(name) ELSE plant_store_fold(name) END
          WHERE name_folded IS NULL AND id > ? AND id <= ?`);
      }
      const statement = fill;
      db.transaction(() => statement.run(after, last))();
    },
    unfilled: async (limit) =>
      (db.prepare('SELECT id, name FROM plants WHERE name_folded IS NULL ORDER BY id LIMIT ?').safeIntegers(true).all(limit) as { id: bigint; name: string }[]),
    setFolded: async (rows) => {
      const set = db.prepare('UPDATE plants SET name_folded = ? WHERE id = ? AND name_folded IS NULL');
      db.transaction(() => {
        for (const r of rows) set.run(r.folded, r.id);
      })();
    },
  };
}
