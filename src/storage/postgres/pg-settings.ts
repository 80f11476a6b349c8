// The settings the PostgreSQL engine adds (its Engine object declares them; config.ts joins them): the pool of
// each instance and its two deadlines.
import { integer, type SettingRows } from '../../kit/settings.js';

export interface PgSettings {
  /** PostgreSQL connections per instance at most. */
  readonly databasePoolSize: number;
  /** PostgreSQL: longest a statement may run before the server cancels it (the request gets 503). */
  readonly databaseStatementTimeoutMs: number;
  /** PostgreSQL: longest opening a connection may take (start-up fails, or a request gets 503). */
  readonly databaseConnectTimeoutMs: number;
}

export const PG_SETTINGS: SettingRows<PgSettings> = [
  { key: 'databasePoolSize', env: 'DATABASE_POOL_SIZE', description: 'PostgreSQL connections per instance at most', default: 10, parse: integer(1, 1_000) },
  { key: 'databaseStatementTimeoutMs', env: 'DATABASE_STATEMENT_TIMEOUT_MS', description: 'PostgreSQL statement_timeout: a statement running longer is cancelled and its request gets 503 (a migration runs without it)', default: 10_000, parse: integer(100, 600_000) },
  { key: 'databaseConnectTimeoutMs', env: 'DATABASE_CONNECT_TIMEOUT_MS', description: 'PostgreSQL: longest opening a connection may take (start-up fails, a request gets 503)', default: 5_000, parse: integer(100, 120_000) },
];
