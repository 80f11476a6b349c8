// PostgreSQL's terms for the schema history (storage/schema-history.ts). Released terms never change.
import type { Migration } from '../migrator.js';
import { migrationsFor } from '../schema-history.js';

export const MIGRATIONS: readonly Migration[] = migrationsFor({
  int64Key: 'BIGINT',
  time: 'TIMESTAMPTZ',
  tableOptions: '',
  orderColumn: ',\n        seq BIGSERIAL NOT NULL   -- insertion order, for listing ties',
  orderKey: ', seq',
  int64: 'BIGINT',
  // A sequence, not a row every writer would lock: instances commit in parallel.
  versionCounter: `CREATE SEQUENCE plant_versions START 2;
      ALTER TABLE plants ALTER COLUMN version SET DEFAULT nextval('plant_versions');`,
  addEventOrder: 'ALTER TABLE webhook_events ADD COLUMN seq BIGSERIAL NOT NULL;',
  eventOrder: 'seq',
  codePointOrder: ' COLLATE "C"', // byte order of UTF-8: code point order, whatever the database's locale
  // pg_trgm (PostgreSQL's contrib) is a trusted extension: the database's owner may create it.
  nameTrigramIndex: `CREATE EXTENSION IF NOT EXISTS pg_trgm;
      CREATE INDEX plants_name_trgm ON plants USING gin (name_folded gin_trgm_ops);`,
});
