// SQLite's terms for the schema history (storage/schema-history.ts). Released terms never change.
import type { Migration } from '../migrator.js';
import { migrationsFor, type HistoryPorts } from '../schema-history.js';

export const MIGRATIONS: readonly Migration<HistoryPorts>[] = migrationsFor({
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
  nameKey: 'name',          // BINARY compares UTF-8 bytes: code point order; an index entry may be any size
  // An FTS5 table over plants' folded names (external content: it holds only the trigrams), kept in step by
  // triggers, so that every write path (the write worker, import, restore) keeps it. A row holds an entry exactly
  // while its folded name is not NULL: rows from before this version are not in it until the store fills their
  // folded names, and FTS5 must never be told to delete an entry it does not hold (that corrupts the index).
  nameTrigramIndex: `CREATE VIRTUAL TABLE plant_names USING fts5(name_folded, content='plants', content_rowid='id', tokenize='trigram case_sensitive 1');
      CREATE TRIGGER plant_names_insert AFTER INSERT ON plants WHEN new.name_folded IS NOT NULL BEGIN
        INSERT INTO plant_names (rowid, name_folded) VALUES (new.id, new.name_folded);
      END;
      CREATE TRIGGER plant_names_delete AFTER DELETE ON plants WHEN old.name_folded IS NOT NULL BEGIN
        INSERT INTO plant_names (plant_names, rowid, name_folded) VALUES ('delete', old.id, old.name_folded);
      END;
      CREATE TRIGGER plant_names_update AFTER UPDATE OF name_folded ON plants BEGIN
        INSERT INTO plant_names (plant_names, rowid, name_folded) SELECT 'delete', old.id, old.name_folded WHERE old.name_folded IS NOT NULL;
        INSERT INTO plant_names (rowid, name_folded) SELECT new.id, new.name_folded WHERE new.name_folded IS NOT NULL;
      END;`,
  // The whole texts: BINARY compares UTF-8 bytes (code point order), and an index entry may be any size.
  foldedNameKey: 'name_folded, name',
  // The byte length differs from the length in characters (which stops at a U+0000) unless every character is ASCII.
  nameBeyondAscii: 'length(CAST(name AS BLOB)) <> length(name)',
  // VIRTUAL: the only kind ADD COLUMN may add; the index holds it. An integer beyond 2^53 stays exact (64-bit).
  eventPlantColumn: "plant_id INTEGER GENERATED ALWAYS AS (json_extract(payload, '$.id')) VIRTUAL",
});
