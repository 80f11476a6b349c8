// PostgreSQL's side of migrating (storage/migrator.ts): one session under an advisory lock, each migration in
// its own transaction with no statement timeout, and the ports the history's data steps run over
// (storage/schema-history.ts).
import type pg from 'pg';
import type { MigrationAdapter } from '../migrator.js';
import type { FoldedNamesPort } from '../folded-names.js';
import type { HistoryPorts } from '../schema-history.js';
import { describeTarget } from './pool.js';
import { fromDbText, toDbText } from './text.js';

/** pg_advisory_lock key held while migrating ('plant-st' as bytes); instances migrating at once take turns. */
const MIGRATION_LOCK = 0x706c616e742d7374n;

/** How long one migration's SQL may run before the connection is given up for lost: hours, not a request's seconds. */
const MIGRATION_QUERY_TIMEOUT_MS = 24 * 3600_000;

/**
 * One connection for the whole run, holding an advisory lock: a second instance starting at the same time
 * waits, then finds the migrations applied. DDL is transactional here: a failed migration leaves nothing. The
 * data steps run on the pool, after the lock is released.
 */
export function migrationAdapter(pool: pg.Pool, url: string): MigrationAdapter<HistoryPorts> {
  let client: pg.PoolClient | undefined;
  const session = () => client!;
  return {
    async locked(run) {
      try {
        client = await pool.connect();
      } catch (err) {
        throw new Error(`cannot connect to PostgreSQL at ${describeTarget(url)}: ${reason(err)}`, { cause: err });
      }
      const onError = () => {};
      client.on('error', onError);
      let broken: Error | undefined;
      try {
        await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK.toString()]);
        // A migration builds indexes and rewrites tables, which on a large store takes far longer than a request's
        // statement may (DATABASE_STATEMENT_TIMEOUT_MS): this session runs without it until released.
        await client.query('SET statement_timeout = 0');
        return await run();
      } catch (err) {
        broken = err as Error;
        throw new Error(`cannot migrate the PostgreSQL database at ${describeTarget(url)}: ${reason(err)}`, { cause: err });
      } finally {
        if (!broken) await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK.toString()]).catch((e: Error) => (broken = e));
        if (!broken) await client.query('RESET statement_timeout').catch((e: Error) => (broken = e));
        client.removeListener('error', onError);
        // A session whose state is uncertain is closed rather than reused (closing also frees the lock).
        client.release(broken ?? undefined);
        client = undefined;
      }
    },
    async ensureHistory() {
      await session().query('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL)');
    },
    async appliedVersions() {
      return new Set((await session().query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map((r) => r.version));
    },
    async apply(m) {
      const c = session();
      try {
        await c.query('BEGIN');
        // Under the advisory lock nobody else migrates, but a version recorded meanwhile is still not run twice.
        if ((await c.query('SELECT 1 FROM schema_migrations WHERE version = $1', [m.version])).rowCount) {
          await c.query('ROLLBACK');
          return 'already-applied';
        }
        // pg reads a query's own query_timeout (its types do not declare it).
        await c.query({ text: m.sql, query_timeout: MIGRATION_QUERY_TIMEOUT_MS } as pg.QueryConfig);
        await c.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, now())', [m.version, m.name]);
        await c.query('COMMIT');
        return 'applied';
      } catch (err) {
        await c.query('ROLLBACK').catch(() => {});
        throw err;
      }
    },
    ports: { foldedNames: foldedNamesPort(pool) },
  };
}

/**
 * The folded names over the pool (this instance's writes and other instances' go on meanwhile). An ASCII name
 * folds to its ASCII lower case, which lower() in the "C" collation writes (A-Z only): those are filled in SQL;
 * the others are read out, folded and written back.
 */
function foldedNamesPort(pool: pg.Pool): FoldedNamesPort {
  return {
    async lastUnfilled(after, limit) {
      const { rows: [end] } = await pool.query<{ to: string | null }>('SELECT max(id)::text AS to FROM (SELECT id FROM plants WHERE name_folded IS NULL AND id > $1 ORDER BY id LIMIT $2) AS chunk', [after.toString(), limit]);
      return end?.to ? BigInt(end.to) : undefined;
    },
    async fillInDatabase(after, last) {
      // Every character ASCII exactly when the byte length is the length in characters (an escaped U+0000 is not).
      await pool.query('UPDATE plants SET name_folded = lower(name COLLATE "C") WHERE name_folded IS NULL AND id > $1 AND id <= $2 AND octet_length(name) = char_length(name)', [after.toString(), last.toString()]);
    },
    async unfilled(limit) {
      const { rows } = await pool.query<{ id: string; name: string }>('SELECT id::text AS id, name FROM plants WHERE name_folded IS NULL ORDER BY id LIMIT $1', [limit]);
      return rows.map((r) => ({ id: BigInt(r.id), name: fromDbText(r.name) }));
    },
    async setFolded(rows) {
      await pool.query('UPDATE plants p SET name_folded = t.folded FROM unnest($1::int8[], $2::text[]) AS t(id, folded) WHERE p.id = t.id AND p.name_folded IS NULL', [
        rows.map((r) => r.id.toString()),
        rows.map((r) => toDbText(r.folded)),
      ]);
    },
  };
}

function reason(err: unknown): string {
  const e = err as { message?: string; code?: string };
  const msg = e.message || e.code || String(err);
  return msg.replace(/\/\/([^:@/]*):([^@/]*)@/g, '//$1:****@');
}

