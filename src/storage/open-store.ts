// Picks the engine from DATABASE_URL. Adding an engine means one folder beside sqlite/ and its entry in ENGINES.
import type { Config } from '../config.js';
import type { Engine, MigrationResult, Store } from './store.js';
import { MigrationError, type Migration } from './migrator.js';
import { sqliteEngine, type SqliteOptions } from './sqlite/sqlite-store.js';
import { postgresEngine, type PgStoreOptions } from './postgres/pg-store.js';

/** Options of every engine; each reads its own. */
export type StoreOptions = SqliteOptions & PgStoreOptions;

/** The engine options the configuration sets (the PostgreSQL pool and its timeouts). */
export function storeOptions(config: Config): StoreOptions {
  return {
    poolSize: config.databasePoolSize,
    statementTimeoutMs: config.databaseStatementTimeoutMs,
    connectTimeoutMs: config.databaseConnectTimeoutMs,
  };
}

const ENGINES: readonly Engine<StoreOptions>[] = [sqliteEngine, postgresEngine];

export function createStore(databaseUrl: string, options: StoreOptions = {}): Store {
  const engine = ENGINES.find((e) => e.accepts(databaseUrl));
  if (!engine) throw new Error(`unsupported DATABASE_URL scheme: ${databaseUrl.split(':')[0]}`);
  return engine.create(databaseUrl, options);
}

/** Opens the store and brings its schema up to date (a test may give its own migrations); throws MigrationError (and closes) if that fails. */
export async function openStore(
  databaseUrl: string,
  options: StoreOptions & { migrations?: readonly Migration[] } = {},
): Promise<{ store: Store; migrations: MigrationResult[] }> {
  const store = createStore(databaseUrl, options);
  let migrations: MigrationResult[];
  try {
    migrations = await store.migrate(options.migrations);
  } catch (err) {
    await store.close().catch(() => {});
    throw err;
  }
  if (migrations.some((r) => r.status === 'failed')) {
    await store.close().catch(() => {});
    throw new MigrationError(migrations);
  }
  return { store, migrations };
}
