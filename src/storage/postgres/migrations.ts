// PostgreSQL's terms for the schema history (storage/schema-history.ts). Released terms never change.
import type { Migration } from '../migrator.js';
import { migrationsFor, type HistoryPorts } from '../schema-history.js';

/**
 * How many leading characters of a name the name-order indexes hold (plants_name_id): the document's limit on a
 * name, so that every name written since the limit is whole in its key.
 */
export const NAME_KEY_CHARS = 256;

export const MIGRATIONS: readonly Migration<HistoryPorts>[] = migrationsFor({
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
  // The "C" collation is UTF-8's byte order: code point order, whatever the database's locale. The first
  // NAME_KEY_CHARS characters (at most 4 bytes each) keep an entry within a btree page's third, whatever the name.
  nameKey: `(left(name, ${NAME_KEY_CHARS})) COLLATE "C"`,
  // pg_trgm (PostgreSQL's contrib) is a trusted extension: the database's owner may create it.
  nameTrigramIndex: `CREATE EXTENSION IF NOT EXISTS pg_trgm;
      CREATE INDEX plants_name_trgm ON plants USING gin (name_folded gin_trgm_ops);`,
  // The folded name's first NAME_KEY_CHARS characters, as nameKey: a fold may make a name several times longer.
  foldedNameKey: `(left(name_folded, ${NAME_KEY_CHARS})) COLLATE "C"`,
  // An escaped U+0000 (text.ts) is beyond ASCII too.
  nameBeyondAscii: 'octet_length(name) <> char_length(name)',
  // Read from the text, not as JSON: jsonb refuses a payload holding \u0000 (a name may), and every payload
  // starts with its id (plants/plant-event.ts).
  eventPlantColumn: "plant_id BIGINT GENERATED ALWAYS AS (substring(payload from '^\\{\"id\":(-?[0-9]+)')::bigint) STORED",
});
