// The PostgreSQL engine: a pg.Pool shared by the instance, named prepared statements, group commit of
// plant writes (one transaction per turn of the event loop, answered after COMMIT), reads by id of one turn
// in one statement, and migrations serialised across instances by an advisory lock. Several instances may
// share one database.
import type pg from 'pg';
import type { EngineOptions, Store } from '../store.js';
import type { WebhookStore } from '../../webhooks/delivery.js';
import { decideCreate, decidePatch, replaceAsPatch, type CreateOutcome, type PlantPage, type PlantQuery, type PlantRecord, type PlantWrite, type VersionedPlant, type WriteResult } from '../../plants/plant.js';
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
  // Sorted by id so that concurrent batches (other instances) take row locks in one order: no deadlock.
  // The version comes from the column's default, the plant_versions sequence.
  insertPlants: `INSERT INTO plants (id, name, tag, created_at, name_folded)
    SELECT id, name, tag, $4, folded FROM unnest($1::int8[], $2::text[], $3::text[], $5::text[]) AS t(id, name, tag, folded) ORDER BY id
    ON CONFLICT (id) DO NOTHING RETURNING id, version`,
  plantsByIds: 'SELECT id, name, tag, version FROM plants WHERE id = ANY($1::int8[])',
  // A patch (a replace too, as the patch that means it) merges into the row as this transaction finds it,
  // locked until the commit (plants/ decidePatch).
  lockPlant: 'SELECT id, name, tag, version FROM plants WHERE id = $1 FOR UPDATE',
  patchPlant: `UPDATE plants SET name = $2, tag = $3, name_folded = $4, version = nextval('plant_versions') WHERE id = $1 RETURNING version`,
  // A delete takes a new version too (its event's), above every version the plant had: the row lock it holds
  // orders it after the plant's last update.
  deletePlant: `DELETE FROM plants WHERE id = $1 AND ($2::int8 IS NULL OR version = $2)
    RETURNING id, name, tag, version, nextval('plant_versions') AS deleted_version`,
  // The events of the writes, in the plants' transaction; their positions and deliveries come after (pg-events.ts).
  insertEvents: `INSERT INTO webhook_events (id, type, payload, created_at, trace_context)
    SELECT e.id, e.type, e.payload, $4, e.trace FROM unnest($1::text[], $2::text[], $3::text[], $5::text[]) AS e(id, type, payload, trace)`,
  getPlant: 'SELECT id, name, tag, version FROM plants WHERE id = $1',
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

export class PgStore extends GroupCommittedPlants implements Store {
  readonly engine = 'postgres';
  private readonly pool: pg.Pool;
  protected readonly groupCommit: Batcher<PlantWrite, WriteResult>;
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
        commit: (items) => guarded(() => false, () => retryingTransaction(this.pool, (client) => writePlants(client, items))),
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
    const results = await this.guard(() => retryingTransaction(this.pool, (client) => writePlants(client, items)));
    return results.map((r, i) => decideCreate(plants[i]!, r));
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
 * Writes a batch inside the caller's transaction and reports each write (plants/ judges the reports). The
 * creates go first, in one statement: a free id is inserted; a later create of an id created earlier in the
 * batch finds it. Then replaces, patches and deletes, in order. Every write of the batch is still waiting for its
 * answer, so any order of them is one a client could have seen. Last, the events of the writes that happened,
 * in one statement.
 */
async function writePlants(client: pg.PoolClient, items: readonly PlantWrite[]): Promise<WriteResult[]> {
  const now = new Date();
  const results = new Array<WriteResult>(items.length);
  const happened: Happened[] = [];
  const creates = items.flatMap((item, i) => (item.op === 'create' ? [{ item, i }] : []));
  if (creates.length > 0) await writeCreates(client, creates, results, now);
  for (const { item, i } of creates) {
    if (results[i]!.wrote) happened.push({ op: item.op, plant: item.plant, version: results[i]!.row!.version, trace: item.trace ?? null });
  }
  for (let i = 0; i < items.length; i++) {
    const asked = items[i]!;
    if (asked.op === 'create') continue;
    const item = asked.op === 'replace' ? replaceAsPatch(asked) : asked;
    const id = item.id.toString();
    if (item.op === 'patch') {
      const { rows } = await client.query<PlantRow>(named('lockPlant', [id]));
      const found = rows[0] && versionedPlantOf(rows[0], pgText);
      const decision = decidePatch(found, item.patch, item.ifVersions);
      if (decision.kind !== 'write') {
        results[i] = { wrote: false, row: found };
        continue;
      }
      const { name, tag } = decision.plant;
      const updated = await client.query<{ version: string }>(named('patchPlant', [id, toDbText(name), toDbText(tag), toDbText(foldName(name))]));
      const version = BigInt(updated.rows[0]!.version);
      results[i] = { wrote: true, row: { ...decision.plant, version } };
      happened.push({ op: asked.op, plant: decision.plant, version, trace: asked.trace ?? null });
      continue;
    }
    const deleted = (await client.query<PlantRow & { deleted_version: bigint | string }>(named('deletePlant', [id, item.ifVersion?.toString() ?? null]))).rows[0];
    if (deleted) {
      const row = versionedPlantOf(deleted, pgText);
      results[i] = { wrote: true, row };
      happened.push({ op: asked.op, plant: row, version: BigInt(deleted.deleted_version), trace: asked.trace ?? null });
      continue;
    }
    const { rows } = await client.query<PlantRow>(named('getPlant', [id]));
    results[i] = { wrote: false, row: rows[0] ? versionedPlantOf(rows[0], pgText) : undefined };
  }
  if (happened.length > 0) await writeEvents(client, happened, now);
  return results;
}

type Happened = { op: PlantWrite['op']; plant: PlantRecord; version: bigint; trace: string | null };

type Create = { item: Extract<PlantWrite, { op: 'create' }>; i: number };

async function writeCreates(client: pg.PoolClient, creates: readonly Create[], results: WriteResult[], now: Date): Promise<void> {
  const first = new Map<bigint, Create>();
  for (const c of creates) if (!first.has(c.item.plant.id)) first.set(c.item.plant.id, c);
  const ids: string[] = [];
  const names: string[] = [];
  const tags: (string | null)[] = [];
  const folded: string[] = [];
  for (const { item } of first.values()) {
    ids.push(item.plant.id.toString());
    names.push(toDbText(item.plant.name));
    tags.push(toDbText(item.plant.tag));
    folded.push(toDbText(foldName(item.plant.name)));
  }
  const inserted = await client.query<{ id: bigint; version: string }>(named('insertPlants', [ids, names, tags, now, folded]));
  const created = new Map(inserted.rows.map((r) => [BigInt(r.id), BigInt(r.version)]));

  // Rows that were there before (committed by anyone): what a replay or conflict is compared with.
  const stored = new Map<bigint, VersionedPlant>();
  if (created.size < first.size) {
    const others = ids.filter((id) => !created.has(BigInt(id)));
    const { rows } = await client.query<PlantRow>(named('plantsByIds', [others]));
    for (const r of rows) stored.set(BigInt(r.id), versionedPlantOf(r, pgText));
  }
  for (const [id, version] of created) stored.set(id, { ...first.get(id)!.item.plant, version });

  for (const c of creates) {
    const id = c.item.plant.id;
    const row = stored.get(id);
    // Deleted by another instance between the insert and the read: the whole batch is tried again.
    if (!row) throw Object.assign(new Error(`plant ${id} vanished during the commit`), { code: '40001' });
    results[c.i] = { wrote: first.get(id) === c && created.has(id), row };
  }
}

/** The events of the writes that happened, in one statement. */
async function writeEvents(client: pg.PoolClient, happened: readonly Happened[], now: Date): Promise<void> {
  const events = happened.map((h) => writeEvent(h.op, h.plant, h.version));
  await client.query(named('insertEvents', [events.map((e) => e.id), events.map((e) => e.type), events.map((e) => e.payload), now, happened.map((h) => h.trace)]));
}
