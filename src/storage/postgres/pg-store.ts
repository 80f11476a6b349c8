// The PostgreSQL engine: a pg.Pool shared by the instance, named prepared statements, group commit of
// plant writes (one transaction per turn of the event loop, answered after COMMIT), reads by id of one turn
// in one statement, and migrations serialised across instances by an advisory lock. Several instances may
// share one database.
import type pg from 'pg';
import type { Engine, EngineOptions, Store } from '../store.js';
import type { WebhookStore } from '../../webhooks/delivery.js';
import type { CreateOutcome, PlantPage, PlantQuery, PlantRecord, PlantWrite, VersionedPlant } from '../../plants/plant.js';
import { plantBatch, type WriteOutcome } from '../../plants/plant-batch.js';
import { runStepsAsync } from '../../steps.js';
import { plantStatements } from './pg-plant-statements.js';
import { foldName } from '../../plants/plant-search.js';
import { writeEvent } from '../../webhooks/outbox-events.js';
import type { TokenRecord } from '../../auth/token.js';
import type { StoredTicket, TicketRecord } from '../../auth/stream-tickets.js';
import { GroupCommittedPlants } from '../plant-writes.js';
import { Batcher } from '../batcher.js';
import { Coalesced } from '../coalesced.js';
import { MIGRATIONS } from './migrations.js';
import { PgWebhookStore } from './pg-webhooks.js';
import { PgEventStore } from './pg-events.js';
import { PgRestoreStore } from './pg-restores.js';
import { listenerName, runningOnDatabase } from './pg-servers.js';
import { createPool, describeTarget, guarded, retryingTransaction, type PostgresOptions } from './pool.js';
import { fromDbText, pgText, toDbText } from './text.js';
import { PgPlantQueries } from './pg-plant-queries.js';
import { TICKET_BY_HASH_SQL, ticketOf, tokenOf, versionedPlantOf, type PlantRow, type TicketRow, type TokenRow } from '../rows.js';
import { runMigrations, type Migration, type MigrationAdapter, type MigrationResult } from '../migrator.js';
import { parseDatabaseUrl } from '../database-url.js';
import { FOLDED_NAMES_VERSION } from '../schema-history.js';

export type PgStoreOptions = PostgresOptions & EngineOptions;

/** pg_advisory_lock key held while migrating ('plant-st' as bytes); instances migrating at once take turns. */
const MIGRATION_LOCK = 0x706c616e742d7374n;

const SQL = {
  plantsByIds: 'SELECT id, name, tag, version FROM plants WHERE id = ANY($1::int8[])',
  countPlants: 'SELECT count(*) AS n FROM plants',
  insertToken: `INSERT INTO api_tokens (id, name, token_hash, scopes, created_at, last_used_at, expires_at, revoked_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
  tokenByHash: 'SELECT * FROM api_tokens WHERE token_hash = $1',
  listTokens: 'SELECT * FROM api_tokens ORDER BY created_at, seq',
  revokeToken: 'UPDATE api_tokens SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL',
  countTokens: 'SELECT count(*) AS n FROM api_tokens',
  touchTokens: `UPDATE api_tokens t SET last_used_at = greatest(t.last_used_at, u.at)
    FROM unnest($1::text[], $2::timestamptz[]) AS u(id, at) WHERE t.id = u.id`,
  ticketByHash: TICKET_BY_HASH_SQL('$1'),
  // Expired tickets go as new ones come, in the same statement.
  insertTicket: `WITH expired AS (DELETE FROM event_tickets WHERE expires_at < $4)
    INSERT INTO event_tickets (ticket_hash, token_id, expires_at) VALUES ($1, $2, $3)`,
  ping: 'SELECT 1 FROM schema_migrations LIMIT 1',
  connectionLimit: `SELECT current_setting('max_connections')::int - current_setting('superuser_reserved_connections')::int AS n`,
} as const;

/** A named prepared statement: parsed once per connection, then only bound and executed. */
function named(name: keyof typeof SQL, values: unknown[]): pg.QueryConfig {
  return { name, text: SQL[name], values };
}

/** `postgres://` or `postgresql://`; pool size and timeouts default to the settings' defaults. */
export const postgresEngine: Engine<PgStoreOptions> = {
  accepts: (url) => parseDatabaseUrl(url)?.engine === 'postgres',
  // Every process its own pool: the database server orders their writes.
  sharing: () => 'independent',
  create: (url, options) => new PgStore(url, options),
  runningServers: (url, options) => runningOnDatabase(url, options.connectTimeoutMs),
};

export class PgStore extends GroupCommittedPlants implements Store {
  readonly engine = 'postgres';
  private readonly pool: pg.Pool;
  protected readonly groupCommit: Batcher<PlantWrite, WriteOutcome>;
  protected closed = false;
  readonly webhooks: WebhookStore;
  readonly events: PgEventStore;
  readonly restores: PgRestoreStore;
  /** getPlant's reads: those of one turn of the event loop in one statement (ids as text: exact int8). */
  private readonly plantReads = new Coalesced<bigint, PlantRow>(async (ids) => {
    const { rows } = await this.query<PlantRow>('plantsByIds', [ids.map(String)]);
    return new Map(rows.map((r) => [r.id, r]));
  });
  /** The list statements, built from each query's description (pg-plant-queries.ts). */
  private readonly plantQueries = new PgPlantQueries((config) => this.guard(() => this.pool.query(config)));

  constructor(readonly url: string, options: PgStoreOptions = {}) {
    super();
    this.pool = createPool(url, options);
    const webhooks = new PgWebhookStore(this.pool, () => this.closed);
    this.webhooks = options.decorateWebhooks?.(webhooks) ?? webhooks;
    this.events = new PgEventStore(this.pool, url, () => this.closed, options.connectTimeoutMs, listenerName(options.serving));
    this.restores = new PgRestoreStore(this.pool, () => this.closed);
    this.groupCommit = new Batcher(
      {
        // Not refused once closing: close() waits for the writes already accepted (driver errors still -> 503).
        commit: (items) => guarded(() => false, () => retryingTransaction(this.pool, (client) => runStepsAsync(plantBatch(items), plantStatements(client)))),
      },
      1,
      undefined,
      (w) => w.trace,
    );
  }

  private guard<T>(fn: () => Promise<T>): Promise<T> {
    return guarded(() => this.closed, fn);
  }

  private async query<R extends pg.QueryResultRow>(name: keyof typeof SQL, values: unknown[]): Promise<pg.QueryResult<R>> {
    return this.guard(() => this.pool.query<R>(named(name, values)));
  }

  async migrate(migrations: readonly Migration[] = MIGRATIONS): Promise<MigrationResult[]> {
    const results = await runMigrations(migrationAdapter(this.pool, this.url), migrations);
    if (results.every((r) => r.status !== 'failed') && migrations.some((m) => m.version === FOLDED_NAMES_VERSION)) await this.fillFoldedNames();
    return results;
  }

  /**
   * Writes the folded name (plants/plant-search.ts) of every plant whose folded name is NULL: written before the
   * schema had it, or set NULL by version 12, which changed the folding; a write meanwhile (this instance's or
   * another's) sets its own, which this leaves alone. An ASCII name folds to its ASCII lower case, which lower()
   * in the "C" collation writes (A-Z only): those are filled in SQL, 50,000 plants a statement; the others in
   * JavaScript, 10,000 a statement (a third less time than 1,000 a statement, on 200,000 accented names).
   */
  private async fillFoldedNames(): Promise<void> {
    for (let from = String(-(2n ** 63n)); ; ) {
      const { rows: [end] } = await this.pool.query<{ to: string | null }>('SELECT max(id)::text AS to FROM (SELECT id FROM plants WHERE name_folded IS NULL AND id > $1 ORDER BY id LIMIT 50000) AS chunk', [from]);
      if (!end?.to) break;
      // Every character ASCII exactly when the byte length is the length in characters (an escaped U+0000 is not).
      await this.pool.query('UPDATE plants SET name_folded = lower(name COLLATE "C") WHERE name_folded IS NULL AND id > $1 AND id <= $2 AND octet_length(name) = char_length(name)', [from, end.to]);
      from = end.to;
    }
    for (;;) {
      const { rows } = await this.pool.query<{ id: string; name: string }>('SELECT id::text AS id, name FROM plants WHERE name_folded IS NULL ORDER BY id LIMIT 10000');
      if (rows.length === 0) return;
      await this.pool.query('UPDATE plants p SET name_folded = t.folded FROM unnest($1::int8[], $2::text[]) AS t(id, folded) WHERE p.id = t.id AND p.name_folded IS NULL', [
        rows.map((r) => r.id),
        rows.map((r) => toDbText(foldName(fromDbText(r.name)))),
      ]);
    }
  }



  async importPlants(plants: readonly PlantRecord[]): Promise<CreateOutcome[]> {
    const items = plants.map((plant): PlantWrite => ({ op: 'create', plant }));
    return (await this.guard(() => retryingTransaction(this.pool, (client) => runStepsAsync(plantBatch(items), plantStatements(client))))) as CreateOutcome[];
  }

  async getPlant(id: bigint): Promise<VersionedPlant | undefined> {
    const row = await this.plantReads.get(id);
    // Decoded per call: callers of one id each get a record of their own.
    return row ? versionedPlantOf(row, pgText) : undefined;
  }

  async listPlants(query: PlantQuery): Promise<PlantRecord[]> {
    return this.plantQueries.records(query);
  }

  async listPlantsJson(query: PlantQuery): Promise<PlantPage> {
    return this.plantQueries.page(query);
  }

  async countMatchingPlants(query: PlantQuery): Promise<bigint> {
    return this.plantQueries.count(query);
  }

  async countPlants(): Promise<number> {
    return Number((await this.query<{ n: bigint }>('countPlants', [])).rows[0]!.n);
  }

  async insertToken(t: TokenRecord): Promise<void> {
    await this.query('insertToken', [t.id, toDbText(t.name), t.hash, t.scopes.join(' '), t.createdAt, t.lastUsedAt, t.expiresAt, t.revokedAt]);
  }

  async findTokenByHash(hash: string): Promise<TokenRecord | undefined> {
    const { rows } = await this.query<TokenRow>('tokenByHash', [hash]);
    return rows[0] ? tokenOf(rows[0], pgText) : undefined;
  }

  async listTokens(): Promise<TokenRecord[]> {
    return (await this.query<TokenRow>('listTokens', [])).rows.map((r) => tokenOf(r, pgText));
  }

  async revokeToken(id: string, at: Date): Promise<boolean> {
    return (await this.query('revokeToken', [at, id])).rowCount === 1;
  }

  async countTokens(): Promise<number> {
    return Number((await this.query<{ n: bigint }>('countTokens', [])).rows[0]!.n);
  }

  async touchTokens(lastUsed: ReadonlyMap<string, Date>): Promise<void> {
    if (lastUsed.size === 0) return;
    await this.query('touchTokens', [[...lastUsed.keys()], [...lastUsed.values()]]);
  }

  async insertTicket(t: TicketRecord, expiredBefore: Date): Promise<void> {
    await this.query('insertTicket', [t.hash, t.tokenId, t.expiresAt, expiredBefore]);
  }

  async findTicketByHash(hash: string): Promise<StoredTicket | undefined> {
    const { rows } = await this.query<TicketRow>('ticketByHash', [hash]);
    return rows[0] ? ticketOf(rows[0]) : undefined;
  }

  async ping(): Promise<void> {
    await this.query('ping', []);
  }

  async connectionLimit(): Promise<number> {
    return (await this.query<{ n: number }>('connectionLimit', [])).rows[0]!.n;
  }

  protected async release(): Promise<void> {
    await this.events.close();
    await this.pool.end();
  }
}

/**
 * One connection for the whole run, holding an advisory lock: a second instance starting at the same time
 * waits, then finds the migrations applied. DDL is transactional here: a failed migration leaves nothing.
 */
/** How long one migration's SQL may run before the connection is given up for lost: hours, not a request's seconds. */
const MIGRATION_QUERY_TIMEOUT_MS = 24 * 3600_000;

function migrationAdapter(pool: pg.Pool, url: string): MigrationAdapter {
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
  };
}

function reason(err: unknown): string {
  const e = err as { message?: string; code?: string };
  const msg = e.message || e.code || String(err);
  return msg.replace(/\/\/([^:@/]*):([^@/]*)@/g, '//$1:****@');
}

