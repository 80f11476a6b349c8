// PostgreSQL's terms for the schema history (storage/schema-history.ts). Released terms never change.
import type { Migration } from '../migrator.js';
import { migrationsFor } from '../schema-history.js';

export const MIGRATIONS: readonly Migration[] = migrationsFor({
  int64Key: 'BIGINT',
  time: 'TIMESTAMPTZ',
  tableOptions: '',
  orderColumn: ',\n        seq BIGSERIAL NOT NULL   -- insertion order, for listing ties',
  orderKey: ', seq',
});
