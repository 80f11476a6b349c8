// What every serving process does on the way up, whether it serves alone or as the primary of several:
// open the store (migrations, secrets at rest) and report it, make the first token on an empty store, and heed
// the stop signals (a worker too).
import type { Logger } from 'pino';
import { type Config, ConfigError, describeConfig, maskUrl, storeOptions } from '../config.js';
import { VERSION } from '../health/version.js';
import type { TokenService } from '../auth/token-service.js';
import { SCOPES } from '../auth/tokens.js';
import { openStore } from '../storage/open-store.js';
import type { SharedWriter, Store } from '../storage/store.js';
import { StorePathError } from '../errors/store-errors.js';
import { databaseFile } from '../storage/engines.js';
import type { Replication } from '../replication/supervisor.js';

/** The start-up warning without WEBHOOK_SECRET_KEYS, with the fix (the README quotes it). */
const SECRETS_IN_CLEAR_WARNING =
  'WEBHOOK_SECRET_KEYS is not set: webhook signing secrets are stored in clear. To encrypt them, give the server and the CLI the same key: WEBHOOK_SECRET_KEYS=$(openssl rand -base64 32)';

/**
 * Opens the store and brings it up to date, logging what that changed. The process that owns the service
 * (alone, or the primary of several) encrypts again every webhook secret not under the first key, and refuses
 * to start without a key a stored secret needs; a worker (`reseal: false`) opens what its primary did.
 */
export async function openServiceStore(
  config: Config,
  logger: Logger,
  engine: { sharedWriter?: SharedWriter; commitOnThisThread?: boolean; reseal?: boolean } = {},
): Promise<Store> {
  const { sharedWriter, reseal = true, ...rest } = engine;
  // Every serving process says which keys it holds, for secrets rotate run beside it (Engine.runningServers).
  const serving = { keyIds: config.webhookSecretKeys.map((k) => k.id) };
  const { store, migrations, secrets } = await openStore(config.databaseUrl, { ...storeOptions(config), sharedWriter, ...rest, serving, resealSecrets: reseal }).catch((err: unknown) => {
    if (!(err instanceof StorePathError)) throw err;
    throw new ConfigError(`DATABASE_URL=${maskUrl(config.databaseUrl)} cannot be used: ${err.message}. Set DATABASE_URL to a file in a folder this user can create and write.`);
  });
  const applied = migrations.filter((m) => m.status === 'applied').map((m) => m.version);
  if (applied.length > 0) logger.info({ versions: applied }, 'migrations applied');
  if (secrets.resealed > 0) logger.info({ count: secrets.resealed }, 'webhook signing secrets encrypted under the first WEBHOOK_SECRET_KEYS key');
  // Said once, by the process that owns the service: a worker opens what its primary opened.
  if (!secrets.encrypted && reseal) logger.warn(SECRETS_IN_CLEAR_WARNING);
  return store;
}

/**
 * Litestream beside the SQLite store when REPLICA_URL names replicas, in the process that owns the store (alone,
 * or the primary of several), started before the first request is answered. Undefined without replicas.
 */
export async function startReplication(config: Config, logger: Logger): Promise<Replication | undefined> {
  // The settings refuse REPLICA_URL on a store with no file.
  const database = config.replicaUrls.length === 0 ? undefined : databaseFile(config.databaseUrl);
  if (database === undefined) return undefined;
  const { createReplication } = await import('../replication/supervisor.js');
  const replication = createReplication({ database, replicas: config.replicaUrls, syncIntervalMs: config.replicaSyncIntervalMs, env: config.litestreamEnv, logger });
  await replication.start();
  return replication;
}

/** On a store with no tokens (and BOOTSTRAP_TOKEN on), makes one with every scope and prints it once. */
export async function bootstrapToken(config: Config, store: Store, tokens: TokenService, url: string, logger: Logger): Promise<void> {
  if (!config.bootstrapToken || (await store.countTokens()) > 0) return;
  const { token, secret } = await tokens.create({ name: 'bootstrap', scopes: [...SCOPES] });
  logger.info({ tokenId: token.id }, 'created the first API token');
  // Printed once, to the console only (never to the log stream's fields); not recoverable later.
  process.stdout.write(
    `\nNo API token existed, so one was created (id ${token.id}, scopes ${SCOPES.join(' ')}). It is shown only now:\n\n` +
      `  ${secret}\n\nUse it as: curl -H 'Authorization: Bearer ${secret}' ${url}/plants\n` +
      `Try the API at ${url}/docs (Authorize, then paste the token).\n` +
      `Manage tokens with: npx plant-store token create | list | revoke\n\n`,
  );
}

/** The address to print: a wildcard listen address is reached as localhost from the same machine. */
export function publicUrl(host: string, port: number): string {
  const shown = host === '0.0.0.0' || host === '::' || host === '[::]' ? 'localhost' : host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return `http://${shown}:${port}`;
}

/** The start line: where the service is, its version, the Node.js running it, its processes and its settings. */
export function announce(config: Config, logger: Logger, port: number, workers: number): string {
  const url = publicUrl(config.host, port);
  logger.info({ node: process.version, version: VERSION, url, docs: `${url}/docs`, workers, config: describeConfig(config) }, 'plant-store is listening');
  return url;
}

/** The stop signals a serving process heeds (stopSignals). */
export interface StopSignals {
  /** The first SIGTERM or SIGINT, once one came. */
  readonly signal: NodeJS.Signals | undefined;
  /** Resolves with the first SIGTERM or SIGINT. */
  readonly received: Promise<NodeJS.Signals>;
  /** `listener` hears every signal after the first. */
  onRepeat(listener: (signal: NodeJS.Signals) => void): void;
}

/**
 * SIGTERM and SIGINT, listened for from now until the process exits: the first stops the server (once it is up,
 * if it came during start-up), and none after it falls back to the default action, which would end the process
 * before its last log lines are written. A signal to the process group (Ctrl-C, systemd's stop) reaches a worker
 * twice, directly and forwarded by the primary, and `npm start` passes Ctrl-C on as a second SIGINT; either can
 * come after the shutdown is done, while the process exits. The listeners keep no process alive.
 */
export function stopSignals(): StopSignals {
  let first: NodeJS.Signals | undefined;
  let resolve!: (signal: NodeJS.Signals) => void;
  const received = new Promise<NodeJS.Signals>((r) => (resolve = r));
  const repeats: ((signal: NodeJS.Signals) => void)[] = [];
  const onSignal = (signal: NodeJS.Signals) => {
    if (first) {
      for (const listener of repeats) listener(signal);
      return;
    }
    first = signal;
    resolve(signal);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  return {
    get signal() {
      return first;
    },
    received,
    onRepeat(listener) {
      repeats.push(listener);
    },
  };
}
