// The PostgreSQL connection pool: int8 parsed to exact bigint, bounded connect and statement times, pool
// errors (a connection dropped while idle) absorbed, and transactions that always return their connection.
import { createRequire } from 'node:module';
import type pg from 'pg';
import { CommitOutcomeUnknownError, StoreUnavailableError } from '../../errors/store-errors.js';

const require = createRequire(import.meta.url);
let driver: typeof pg | undefined;
/** The driver, loaded on first use: a process on SQLite never loads it (start-up time). */
export function pgDriver(): typeof pg {
  return (driver ??= require('pg') as typeof pg);
}

export interface PostgresOptions {
  /** Connections at most per instance (DATABASE_POOL_SIZE). */
  poolSize?: number;
  /** Server-side limit on one statement (DATABASE_STATEMENT_TIMEOUT_MS); the client gives up a second later. */
  statementTimeoutMs?: number;
  /** How long opening a connection may take (DATABASE_CONNECT_TIMEOUT_MS). */
  connectTimeoutMs?: number;
}

const INT8 = 20;
const INT8_ARRAY = 1016;

// Per pool, not pg.types globally: ids are int8 and must never pass through a double.
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === INT8) return (v: string) => BigInt(v);
    if (oid === INT8_ARRAY) {
      const parseArray = (pgDriver().types.getTypeParser as (oid: number, format: 'text') => (v: string) => (string | null)[])(INT8_ARRAY, 'text');
      return (v: string) => parseArray(v).map((x) => (x === null ? null : BigInt(x)));
    }
    return pgDriver().types.getTypeParser(oid, format ?? 'text');
  },
};

export function createPool(url: string, options: PostgresOptions): pg.Pool {
  const statementTimeout = options.statementTimeoutMs ?? 10_000;
  const pool = new (pgDriver().Pool)({
    connectionString: url,
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5_000,
    statement_timeout: statementTimeout,
    // A connection that stops answering (network gone, server frozen) fails the query instead of hanging it.
    query_timeout: statementTimeout + 1_000,
    idle_in_transaction_session_timeout: statementTimeout * 2,
    keepAlive: true,
    application_name: 'plant-store',
    types,
  });
  // A connection broken while idle (server restart, network) is dropped by the pool, which emits it here;
  // without a listener that would crash the process. The next query opens a new connection.
  pool.on('error', () => {});
  // And every connection keeps a listener of its own whatever state the pool has it in (checked out between
  // two queries, being released, being ended), so no 'error' event can ever go unheard and crash the process.
  pool.on('connect', (client) => client.on('error', () => {}));
  // pool.query() releases its connection with the query's error, which closes it, whatever the error: only
  // connections checked out with pool.connect() need care (transaction() below; the migrations close theirs on
  // any error).
  return pool;
}

/**
 * Whether a failed connection must be closed rather than returned to the pool: it reached a server that cannot
 * write (25006: a standby, reached through a name moved too early or an old primary back as a standby; pooled
 * again, it would refuse every write it is lent for, the name long since moved on), the server ended the session
 * or refuses it (57P: shutdown, crash, starting up or in recovery, ...), the connection itself failed (class 08),
 * or the driver gave up waiting for an answer (query_timeout: the connection is still busy with the lost query,
 * so a ROLLBACK would wait as long again). Closing the session is also what rolls back its open transaction.
 */
export function dropsConnection(err: unknown): boolean {
  if (err instanceof pgDriver().DatabaseError) return /^(08|57P|25006$)/.test(err.code ?? '');
  return err instanceof Error && err.message === 'Query read timeout';
}

/** host:port of a postgres URL, for messages: never the user or password. */
export function describeTarget(url: string): string {
  try {
    const u = new URL(url);
    const host = u.hostname || new URLSearchParams(u.search).get('host') || 'localhost';
    return `${host}:${u.port || '5432'}${u.pathname && u.pathname !== '/' ? u.pathname : ''}`;
  } catch {
    return '(unparsable URL)';
  }
}

/**
 * Runs `fn` inside BEGIN/COMMIT on one connection; rolls back on failure; a broken connection, or one on a server
 * that cannot take the write (dropsConnection), is closed rather than pooled again.
 */
export async function transaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>, begin = 'BEGIN'): Promise<T> {
  const client = await pool.connect();
  // Errors of a checked-out connection (it dropped between queries) surface through the next query.
  const onError = () => {};
  client.on('error', onError);
  let broken: Error | undefined;
  try {
    await client.query(begin);
    const result = await fn(client);
    try {
      await client.query('COMMIT');
    } catch (err) {
      // A server error such as a serialization failure means the commit was refused; a lost connection or a
      // server going down (classes 08, 57, XX) leaves it unknown.
      if (err instanceof pgDriver().DatabaseError && !/^(08|57|XX)/.test(err.code ?? '')) throw err;
      broken = err as Error;
      throw new CommitOutcomeUnknownError(err);
    }
    return result;
  } catch (err) {
    if (err instanceof CommitOutcomeUnknownError) throw err;
    if (dropsConnection(err)) {
      broken = err as Error;
      throw err;
    }
    try {
      await client.query('ROLLBACK');
    } catch (rollbackErr) {
      broken = rollbackErr as Error;
    }
    throw err;
  } finally {
    client.removeListener('error', onError);
    client.release(broken);
  }
}

const RETRYABLE = new Set(['40001', '40P01']); // serialization failure, deadlock: nothing was committed

/** Like transaction(), retried a few times on serialization failures and deadlocks. */
export async function retryingTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>, begin?: string): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await transaction(pool, fn, begin);
    } catch (err) {
      if (attempt >= 4 || !RETRYABLE.has((err as { code?: string }).code ?? '')) throw err;
      await new Promise((r) => setTimeout(r, 5 * attempt * Math.random()));
    }
  }
}

/** Driver failures become StoreUnavailableError (503). */
export async function guarded<T>(closed: () => boolean, fn: () => Promise<T>): Promise<T> {
  if (closed()) throw new StoreUnavailableError(new Error('store closed'));
  try {
    return await fn();
  } catch (err) {
    if (err instanceof StoreUnavailableError) throw err;
    throw new StoreUnavailableError(err);
  }
}
