// Opens the store of a DATABASE_URL with the engine that serves it (engines.ts), composes secrets at rest over
// its webhook port and brings its schema up to date.
import type { ProcessSharing, RunningServer, Store } from './store.js';
import { MigrationError, type Migration, type MigrationResult } from './migrator.js';
import { engineOf, type EnginesOptions } from './engines.js';
import { createSecretBox, sealedWebhookStore, sealStoredSecrets, type SecretKey } from '../webhooks/secret-box.js';

/** Options of every engine (each reads its own), and the keys of webhook secrets at rest. */
export type StoreOptions = EnginesOptions & { webhookSecretKeys?: readonly SecretKey[] };

/** Where the webhook signing secrets stand after opening: encrypted or not, and how many were encrypted now. */
export interface SecretsAtRest {
  encrypted: boolean;
  /** How many were encrypted again under the first key (always 0 unless `resealSecrets` was asked for). */
  resealed: number;
}

export interface OpenStoreOptions extends StoreOptions {
  /** A test's own migrations instead of the service's. */
  migrations?: readonly Migration[];
  /**
   * Encrypt again, under the first key of `webhookSecretKeys`, every stored secret not under it, and refuse to
   * open (SecretKeyError, nothing changed) when one needs a key not given. Only `serve` and `plant-store
   * secrets rotate` ask for it: a process that encrypted under a key that a running server lacks would stop
   * that server's deliveries, so every other command leaves the secrets as they are.
   */
  resealSecrets?: boolean;
}

export function createStore(databaseUrl: string, options: StoreOptions = {}): Store {
  return engineOf(databaseUrl).create(databaseUrl, options);
}

/** The servers running on this database, other than this process, and the keys each holds (Engine.runningServers). */
export function runningServers(databaseUrl: string, options: StoreOptions = {}): Promise<RunningServer[]> {
  return engineOf(databaseUrl).runningServers(databaseUrl, options);
}

/** How several server processes can share this database (Engine.sharing). */
export function processSharing(databaseUrl: string): ProcessSharing {
  return engineOf(databaseUrl).sharing(databaseUrl);
}

/**
 * Opens the store and brings its schema up to date (a test may give its own migrations); throws MigrationError
 * (and closes) if that fails. Secrets are re-encrypted only when `resealSecrets` says so.
 */
export async function openStore(
  databaseUrl: string,
  options: OpenStoreOptions = {},
): Promise<{ store: Store; migrations: MigrationResult[]; secrets: SecretsAtRest }> {
  // Every process that opens the store (server, CLI) seals new secrets and opens claimed ones the same way:
  // the sealing wraps the engine's webhook port from the start.
  const box = createSecretBox(options.webhookSecretKeys ?? []);
  const store = createStore(databaseUrl, { ...options, decorateWebhooks: (port) => sealedWebhookStore(port, box) });
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
  let resealed = 0;
  try {
    // A test's own migrations make a schema of their own, without the service's subscriptions to seal.
    if (options.resealSecrets && options.migrations === undefined) resealed = await sealStoredSecrets(store.webhooks, box);
  } catch (err) {
    await store.close().catch(() => {});
    throw err;
  }
  return { store, migrations, secrets: { encrypted: box.encrypts, resealed } };
}
