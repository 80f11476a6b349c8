// The database a command works on: named on stderr before it is touched, and never created by a command
// that only makes sense on the server's database (a token written to a new ./data/ of another folder is
// rejected by the running server, which reads another file).
import { type Config, storeOptions } from '../config.js';
import { openStore, type SecretsAtRest } from '../storage/open-store.js';
import { engineOf } from '../storage/engines.js';
import type { MigrationResult } from '../storage/migrator.js';
import type { Store } from '../storage/store.js';
import { COMMAND } from './subcommand.js';

/** The database a command cannot go on without, with how to make or find it. */
export class DatabaseMissingError extends Error {
  override name = 'DatabaseMissingError';
}

/** "the SQLite database /srv/data/plant-store.db" or "the PostgreSQL database db.internal:5432/plants". */
export function describeDatabase(databaseUrl: string): string {
  return engineOf(databaseUrl).describe(databaseUrl);
}

export interface OpenOptions {
  /** True for commands that may start a new database (migrate, import); false refuses a missing one. */
  create: boolean;
  /** Only `secrets rotate`: re-encrypt the webhook secrets under the first key (openStore's resealSecrets). */
  resealSecrets?: boolean;
}

/**
 * Says on stderr which database the command uses, then opens it (migrating it as the server would, and
 * leaving webhook secrets as stored unless `resealSecrets`). With `create: false` a database that does not
 * exist (a file opening would create, or one the engine refuses to open for that) is a DatabaseMissingError
 * that says how to create it.
 */
export async function openCommandStore(
  config: Config,
  options: OpenOptions,
): Promise<{ store: Store; migrations: MigrationResult[]; secrets: SecretsAtRest }> {
  const url = config.databaseUrl;
  const engine = engineOf(url);
  const absent = engine.absent?.(url);
  if (absent !== undefined && !options.create) {
    throw new DatabaseMissingError(`${absent}. Set DATABASE_URL to the database the server uses, or create this one with \`${COMMAND} migrate\`.`);
  }
  process.stderr.write(`plant-store: Using ${engine.describe(url)}${absent !== undefined ? ', which is created now' : ''}.\n`);
  try {
    // A command serves nothing meanwhile: it writes on its own thread (no write worker to start).
    return await openStore(url, { ...storeOptions(config), commitOnThisThread: true, resealSecrets: options.resealSecrets ?? false });
  } catch (err) {
    // A database the engine cannot open because it does not exist: the server cannot use it either, so say how to make it.
    const absentNow = engine.absentFrom?.(url, err);
    if (absentNow) {
      throw new DatabaseMissingError(
        `${absentNow.said}. Create it (${absentNow.create}) and run \`${COMMAND} migrate\`, or set DATABASE_URL to the database the server uses.`,
      );
    }
    throw err;
  }
}
