// SQLite's terms for the schema history (storage/schema-history.ts). Released terms never change.
import type { Migration } from '../migrator.js';
import { migrationsFor } from '../schema-history.js';

export const MIGRATIONS: readonly Migration[] = migrationsFor({
  int64Key: 'INTEGER',      // SQLite integers are 64-bit; INTEGER PRIMARY KEY is the rowid
  time: 'INTEGER',          // unix milliseconds
  tableOptions: ' STRICT',
  orderColumn: '',          // rowid is the insertion order
  orderKey: '',
  int64: 'INTEGER',
  versionCounter: `CREATE TABLE plant_version_counter (last INTEGER NOT NULL) STRICT;
      INSERT INTO plant_version_counter (last) VALUES (1);`,
  addEventOrder: '',        // rowid
  eventOrder: 'rowid',
});
