// The PostgreSQL engine: a pg.Pool shared by the instance, named prepared statements, group commit of
// plant writes (one transaction per turn of the event loop, answered after COMMIT), reads by id of one turn
// in one statement, and migrations serialised across instances by an advisory lock. Several instances may
// share one database.
import type pg from 'pg';
import type { EngineOptions, Store } from '../store.js';
import type { WebhookStore } from '../../webhooks/delivery.js';
import type { CreateOutcome, PlantPage, PlantQuery, PlantRecord, PlantWrite, VersionedPlant } from '../../plants/plant.js';
import { plantBatch, type WriteOutcome } from '../plant-writes.js';
import { runStepsAsync } from '../../kit/steps.js';
import { plantStatements } from './pg-plant-statements.js';
import type { TokenRecord } from '../../auth/token.js';
import type { StoredTicket, TicketRecord } from '../../auth/stream-tickets.js';
import { GroupCommittedPlants } from '../plant-writes.js';
import { Batcher } from '../batcher.js';
import { Coalesced } from '../coalesced.js';
import { MIGRATIONS } from './migrations.js';
import { PgWebhookStore } from './pg-webhooks.js';
import { PgEventStore } from './pg-events.js';
import { PgRestoreStore } from './pg-restores.js';
import { listenerName } from './pg-servers.js';
import { createPool, guarded, retryingTransaction, type PostgresOptions } from './pool.js';
import { pgText, toDbText } from './text.js';
import { PgPlantQueries } from './pg-plant-queries.js';
import { TICKET_BY_HASH_SQL, ticketOf, tokenOf, versionedPlantOf, type PlantRow, type TicketRow, type TokenRow } from '../rows.js';
import { runMigrations, type Migration, type MigrationResult } from '../migrator.js';
import type { HistoryPorts } from '../schema-history.js';
import { migrationAdapter } from './migration-adapter.js';

export type PgStoreOptions = PostgresOptions & EngineOptions;

const SQL = {
  plantsByIds: 'SELECT id, name, tag, version FROM plants WHERE id = ANY($1::int8[])',
  countPlants: 'SELECT count(*) AS n FROM plants',
  insertToken: `INSERT INTO api_tokens (id, name, token_hash, scopes, created_at, last_used_at, expires_at, revoked_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
  tokenByHash: 'SELECT * FROM api_tokens WHERE token_hash = $1',
  listTokens: 'SELECT * FROM api_tokens ORDER BY created_at, seq',
  firstTokens: 'SELECT * FROM api_tokens ORDER BY created_at, seq LIMIT $1',
  tokensAfter: `SELECT t.* FROM api_tokens t, (SELECT created_at, seq FROM api_tokens WHERE id = $2) c
    WHERE (t.created_at, t.seq) > (c.created_at, c.seq) ORDER BY t.created_at, t.seq LIMIT $1`,
  tokenById: 'SELECT * FROM api_tokens WHERE id = $1',
  revokeToken: 'UPDATE api_tokens SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL',
  countTokens: 'SELECT count(*) AS n FROM api_tokens',
  touchTokens: `UPDATE api_tokens t SET last_used_at = greatest(t.last_used_at, u.at)
    FROM unnest($1::text[], $2::timestamptz[]) AS u(id, at) WHERE t.id = u.id`,
  ticketByHash: TICKET_BY_HASH_SQL('$1'),
  // Expired tickets go as new ones come, in the same statement.
  insertTicket: `WITH expired AS (DELETE FROM event_tickets WHERE expires_at < $4)
    INSERT INTO event_tickets (ticket_hash, token_id, expires_at) VALUES ($1, $2, $3)`,
  ping: 'SELECT 1 FROM schema_migrations LIMIT 1',
  sizeBytes: 'SELECT pg_database_size(current_database())::text AS n',
  connectionLimit: `SELECT current_setting('max_connections')::int - current_setting('superuser_reserved_connections')::int AS n`,
} as const;

/** A named prepared statement: parsed once per connection, then only bound and executed. */
function named(name: keyof typeof SQL, values: unknown[]): pg.QueryConfig {
  return { name, text: SQL[name], values };
}

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

  async migrate(migrations: readonly Migration<HistoryPorts>[] = MIGRATIONS): Promise<MigrationResult[]> {
    return runMigrations(migrationAdapter(this.pool, this.url), migrations);
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

  async tokensPage(limit: number, after?: string): Promise<TokenRecord[]> {
    const { rows } = after === undefined ? await this.query<TokenRow>('firstTokens', [limit]) : await this.query<TokenRow>('tokensAfter', [limit, after]);
    return rows.map((r) => tokenOf(r, pgText));
  }

  async findTokenById(id: string): Promise<TokenRecord | undefined> {
    const { rows } = await this.query<TokenRow>('tokenById', [id]);
    return rows[0] ? tokenOf(rows[0], pgText) : undefined;
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

  async sizeBytes(): Promise<number | undefined> {
    return Number((await this.query<{ n: string }>('sizeBytes', [])).rows[0]!.n);
  }

  async connectionLimit(): Promise<number> {
    return (await this.query<{ n: number }>('connectionLimit', [])).rows[0]!.n;
  }

  protected async release(): Promise<void> {
    await this.events.close();
    await this.pool.end();
  }
}
