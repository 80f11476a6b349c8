// The schema's history: the same numbered versions, with the same names, in every engine. Each engine's
// migrations.ts gives the SQL of every version; a version it lacks (or one the history does not have) fails
// at start-up, so no engine can fall behind the others.
import type { Migration } from './migrator.js';

export const SCHEMA_HISTORY: readonly { version: number; name: string }[] = [
  { version: 1, name: 'plants and api tokens' },
  { version: 2, name: 'webhook subscriptions, outbox and deliveries' },
];

/** The engine's migrations, in history order, from its SQL by version. */
export function migrationsOf(sqlByVersion: Record<number, string>): Migration[] {
  const extra = Object.keys(sqlByVersion).map(Number).filter((v) => !SCHEMA_HISTORY.some((h) => h.version === v));
  if (extra.length > 0) throw new Error(`migration ${extra.join(', ')} is not in the schema history (storage/schema-history.ts)`);
  return SCHEMA_HISTORY.map(({ version, name }) => {
    const sql = sqlByVersion[version];
    if (sql === undefined) throw new Error(`migration ${version} (${name}) has no SQL for this engine`);
    return { version, name, sql };
  });
}
