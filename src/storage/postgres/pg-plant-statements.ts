// The plant batch's statements (storage/plant-writes.ts) on one transaction's client: versions from the
// plant_versions sequence, row locks for what the batch changes, the events in one statement.
import type pg from 'pg';
import type { AsyncPlantStatements } from '../plant-writes.js';
import { foldName } from '../../plants/plant-search.js';
import { versionedPlantOf, type PlantRow } from '../rows.js';
import { pgText, toDbText } from './text.js';

const SQL = {
  // Sorted by id so that concurrent batches (other instances) take row locks in one order: no deadlock.
  // The version comes from the column's default, the plant_versions sequence.
  insert: `INSERT INTO plants (id, name, tag, created_at, name_folded)
    SELECT id, name, tag, $4, folded FROM unnest($1::int8[], $2::text[], $3::text[], $5::text[]) AS t(id, name, tag, folded) ORDER BY id
    ON CONFLICT (id) DO NOTHING RETURNING id, version`,
  stored: 'SELECT id, name, tag, version FROM plants WHERE id = ANY($1::int8[])',
  // Locked until the commit: a patch merges into the row as this transaction finds it.
  current: 'SELECT id, name, tag, version FROM plants WHERE id = $1 FOR UPDATE',
  update: `UPDATE plants SET name = $2, tag = $3, name_folded = $4, version = nextval('plant_versions') WHERE id = $1 RETURNING version`,
  // The row lock it holds orders the delete after the plant's last update, so its new version is above them.
  remove: `DELETE FROM plants WHERE id = $1 AND ($2::int8 IS NULL OR version = $2)
    RETURNING id, name, tag, version, nextval('plant_versions') AS deleted_version`,
  // Their positions and deliveries come after the commit, in a pass (pg-events.ts).
  insertEvents: `INSERT INTO webhook_events (id, type, payload, created_at, trace_context)
    SELECT e.id, e.type, e.payload, $4, e.trace FROM unnest($1::text[], $2::text[], $3::text[], $5::text[]) AS e(id, type, payload, trace)`,
} as const;

/** The statements' names, which operators see in traces (`pg.query:insertPlants`); `plantsByIds` is pg-store.ts's read too. */
const NAMES = { insert: 'insertPlants', stored: 'plantsByIds', current: 'lockPlant', update: 'patchPlant', remove: 'deletePlant', insertEvents: 'insertEvents' } as const;

/** A named prepared statement: parsed once per connection, then only bound and executed. */
function named(name: keyof typeof SQL, values: unknown[]): pg.QueryConfig {
  return { name: NAMES[name], text: SQL[name], values };
}

export function plantStatements(client: pg.PoolClient): AsyncPlantStatements {
  const rows = async <R extends pg.QueryResultRow>(name: keyof typeof SQL, values: unknown[]) => (await client.query<R>(named(name, values))).rows;
  let now = new Date();
  return {
    begin: async () => {
      now = new Date();
    },
    async insert(plants) {
      const inserted = await rows<{ id: bigint; version: string }>('insert', [
        plants.map((p) => p.id.toString()),
        plants.map((p) => toDbText(p.name)),
        plants.map((p) => toDbText(p.tag)),
        now,
        plants.map((p) => toDbText(foldName(p.name))),
      ]);
      const versions = new Map(inserted.map((r) => [BigInt(r.id), BigInt(r.version)]));
      return plants.map((p) => versions.get(p.id) ?? null);
    },
    stored: async (ids) => (await rows<PlantRow>('stored', [ids.map(String)])).map((r) => versionedPlantOf(r, pgText)),
    // Deleted by another instance between the insert and the read: the whole batch is tried again.
    vanished: async (id) => {
      throw Object.assign(new Error(`plant ${id} vanished during the commit`), { code: '40001' });
    },
    current: async (id) => {
      const [row] = await rows<PlantRow>('current', [id.toString()]);
      return row && versionedPlantOf(row, pgText);
    },
    update: async ({ id, name, tag }) => BigInt((await rows<{ version: string }>('update', [id.toString(), toDbText(name), toDbText(tag), toDbText(foldName(name))]))[0]!.version),
    async remove(id, ifVersion) {
      const [row] = await rows<PlantRow & { deleted_version: bigint | string }>('remove', [id.toString(), ifVersion?.toString() ?? null]);
      return row && { plant: versionedPlantOf(row, pgText), version: BigInt(row.deleted_version) };
    },
    insertEvents: async (events) =>
      void (await rows('insertEvents', [events.map((e) => e.id), events.map((e) => e.type), events.map((e) => e.payload), now, events.map((e) => e.trace)])),
  };
}
