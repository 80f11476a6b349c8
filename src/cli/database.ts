// The database a command works on: named on stderr before it is touched, and never created by a command
// that only makes sense on the server's database (a token written to a new ./data/ of another folder is
// rejected by the running server, which reads another file).
import { existsSync } from 'node:fs';
import type { Config } from '../config.js';
import { openStore, storeOptions, type SecretsAtRest } from '../storage/open-store.js';
import { describeTarget } from '../storage/postgres/pool.js';
import { parseDatabaseUrl } from '../storage/database-url.js';
import type { MigrationResult } from '../storage/migrator.js';
import type { Store } from '../storage/store.js';
import { COMMAND } from './subcommand.js';

/** The database a command cannot go on without, with how to make or find it. */
export class DatabaseMissingError extends Error {
  override name = 'DatabaseMissingError';
}

/** The SQLite file of a sqlite: URL (as the store opens it: relative to the working directory). */
export function sqliteFile(databaseUrl: string): string | undefined {
  const parsed = parseDatabaseUrl(databaseUrl);
  return parsed?.engine === 'sqlite' ? parsed.file : undefined;
}

/** "the SQLite database /srv/data/plant-store.db" or "the PostgreSQL database db.internal:5432/plants". */
export function describeDatabase(databaseUrl: string): string {
  const file = sqliteFile(databaseUrl);
  return file !== undefined ? `the SQLite database ${file}` : `the PostgreSQL database ${describeTarget(databaseUrl)}`;
}

export interface OpenOptions {
  /** True for commands that may start a new database (migrate, import); false refuses a missing one. */
  create: boolean;
  /** Only `secrets rotate`: re-encrypt the webhook secrets under the first key (openStore's resealSecrets). */
  resealSecrets?: boolean;
}

/**
 * Says on stderr which database the command uses, then opens it (migrating it as the server would, and
 * leaving webhook secrets as stored unless `resealSecrets`). With
 * `create: false` a SQLite file that does not exist, or a PostgreSQL database that does not, is a
 * DatabaseMissingError that says how to create it.
 */
export async function openCommandStore(
  config: Config,
  options: OpenOptions,
): Promise<{ store: Store; migrations: MigrationResult[]; secrets: SecretsAtRest }> {
  const url = config.databaseUrl;
  const file = sqliteFile(url);
  const missing = file !== undefined && file !== ':memory:' && !existsSync(file);
  if (missing && !options.create) {
    throw new DatabaseMissingError(
      `There is no SQLite database at ${file} (DATABASE_URL is resolved against the working directory, ${process.cwd()}). ` +
        `Set DATABASE_URL to the database the server uses, or create this one with \`${COMMAND} migrate\`.`,
    );
  }
  process.stderr.write(`plant-store: Using ${describeDatabase(url)}${missing ? ', which is created now' : ''}.\n`);
  try {
    // A command serves nothing meanwhile: it writes on its own thread (no write worker to start).
    return await openStore(url, { ...storeOptions(config), commitOnThisThread: true, resealSecrets: options.resealSecrets ?? false });
  } catch (err) {
    // PostgreSQL's "database does not exist": the server cannot use it either, so say how to make it.
    if (((err as Error).cause as { code?: string } | undefined)?.code === '3D000') {
      const name = decodeURIComponent(new URL(url).pathname.slice(1));
      throw new DatabaseMissingError(
        `The PostgreSQL database "${name}" does not exist on ${describeTarget(url).split('/')[0]}. ` +
          `Create it (createdb ${name}) and run \`${COMMAND} migrate\`, or set DATABASE_URL to the database the server uses.`,
      );
    }
    throw err;
  }
}
