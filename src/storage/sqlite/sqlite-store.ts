// The embedded engine: better-sqlite3 in WAL mode with synchronous=FULL, and group commit so that durability
// (one fsync per commit) does not cap throughput at one request per fsync. One writer runs every write, as a
// command (write-commands.ts); which one is the store's role (sqlite-role.ts), decided when it opens: this
// connection, this process's write worker, or the primary of a multi-process server. Reads use this connection,
// which writes nothing unless it is the writer.
import type Database from 'better-sqlite3';
import { stat } from 'node:fs/promises';
import { asStoreError, StoreUnavailableError } from '../../errors/store-errors.js';
import type { EngineOptions, ServedWrite, Store } from '../store.js';
import type { CreateOutcome, PlantPage, PlantQuery, PlantRecord, PlantWrite, VersionedPlant } from '../../plants/plant.js';
import type { WriteOutcome } from '../plant-writes.js';
import type { WebhookStore } from '../../webhooks/delivery.js';
import type { Observer } from '../../observations/observations.js';
import type { TokenRecord } from '../../auth/token.js';
import type { StoredTicket, TicketRecord } from '../../auth/stream-tickets.js';
import { TICKET_BY_HASH_SQL, ticketOf, tokenOf, versionedPlantOf, type PlantRow, type TicketRow, type TokenRow } from '../rows.js';
import { SqlitePlantQueries } from './sqlite-plant-queries.js';
import { CountReader } from './count-reader.js';
import { GroupCommittedPlants } from '../plant-writes.js';
import { Batcher, type BatchCommitter } from '../batcher.js';
import { MIGRATIONS } from './migrations.js';
import { runMigrations, type Migration, type MigrationResult } from '../migrator.js';
import { migrationAdapter } from './migration-adapter.js';
import { failedReply, resultOf, type ArgsOf, type CommandName, type ResultOf, type Write } from './write-commands.js';
import { decideRole, plantsHere, recordBatchSpans, writesHere, type SqliteRole, type WriterOptions } from './sqlite-role.js';
import { SqliteWebhookStore } from './sqlite-webhooks.js';
import { SqliteEventStore, type EventPassRunner } from './sqlite-events.js';
import { SqliteRestoreStore } from './sqlite-restores.js';
import { openDatabaseFile } from './connection-setup.js';
import { writeServingMark } from './serving-mark.js';
import { tracing } from '../../tracing/tracing-switch.js';
import { decodeOutcomes, encodeItems, wroteAny, type WireCommand, type WireItems, type WireOutcomes, type WireReply } from '../writer-wire.js';
import type { HistoryPorts } from '../schema-history.js';

/** The engine's options; those that decide who writes are sqlite-role.ts's. */
export interface SqliteOptions extends EngineOptions, WriterOptions {}

/** Batches a worker may have at the shared writer at once (each is one turn of its event loop). */
const SHARED_WRITER_BATCHES_IN_FLIGHT = 64;

export class SqliteStore extends GroupCommittedPlants implements Store {
  readonly engine = 'sqlite';
  private readonly db: Database.Database;
  protected readonly groupCommit: Batcher<PlantWrite, WriteOutcome>;
  protected closed = false;

  private prepared?: ReturnType<SqliteStore['prepare']>;
  readonly webhooks: WebhookStore;
  readonly events: SqliteEventStore;
  readonly restores: SqliteRestoreStore;
  /** Who runs every write (sqlite-role.ts). */
  private readonly role: SqliteRole;
  /** The thread that runs counts (count-reader.ts), for a database in a file. */
  private readonly counts?: CountReader;
  /** Removes the serving mark this process wrote on the file (serving-mark.ts). */
  private readonly unmark?: () => void;

  constructor(readonly file: string, options: SqliteOptions = {}) {
    super();
    this.db = openDatabaseFile(file, options.busyTimeoutMs ?? 5_000, options.autoCheckpoint ?? true);
    const write: Write = (name, ...args) => this.writeCommand(name, ...args);
    const webhooks = new SqliteWebhookStore(this.db, (fn) => this.guard(fn), write);
    this.webhooks = options.decorateWebhooks?.(webhooks) ?? webhooks;
    this.restores = new SqliteRestoreStore(this.db, (fn) => this.guard(fn), write);
    const role = (this.role = decideRole(file, this.db, options));
    // An in-memory database exists on this connection only.
    if (file !== ':memory:') this.counts = new CountReader({ file, busyTimeoutMs: options.busyTimeoutMs ?? 5_000 });
    const remote = writesHere(role) ? undefined : role.transport;
    // Not refused once closing: the group commit commits what it accepted before (close()).
    const committer: BatchCommitter<PlantWrite, WriteOutcome> = {
      commit: async (items) => {
        if (writesHere(role)) return plantsHere(role.writer, items);
        // To a shared writer, a batch is handed over untimed: the writer's own commit span shows the statements.
        return decodeOutcomes(await (role.kind === 'follower' ? this.command('plants', encodeItems(items)) : this.workerBatch(encodeItems(items))));
      },
      warm: () => remote?.warm?.(),
      close: async () => remote?.close?.(),
    };
    // The writer's sequencer runs the passes; this process's feed readers wake when it says so.
    const follower = role.kind === 'follower' ? role.transport : undefined;
    const passes: EventPassRunner = follower
      ? { sequence: async () => ({ events: 0, deliveries: 0, more: false }), removeOlderThan: async () => 0 }
      : { sequence: (maxDeliveries, now) => this.writeCommand('sequence', maxDeliveries, now), removeOlderThan: (cutoff, maxEvents) => this.writeCommand('removeOlderThan', cutoff, maxEvents) };
    // A shared writer groups what every worker sends: each turn's batch goes at once instead of after the last.
    this.groupCommit = new Batcher(committer, follower ? SHARED_WRITER_BATCHES_IN_FLIGHT : 1, undefined, (w) => w.trace, follower ? 'commit hand-off' : 'commit');
    this.events = new SqliteEventStore(this.db, (fn) => this.guard(fn), passes, follower ? (listener) => follower.watch(listener) : undefined);
    // One mark per file, by the process that writes it: a worker of a shared writer serves what its primary marked.
    if (options.serving && (role.kind === 'primary' || role.kind === 'write-worker')) this.unmark = writeServingMark(file, options.serving.keyIds);
  }

  override observe(observer: Observer): () => void {
    // The writer's process reports the commits; observed here too, each would count once per process.
    if (this.role.kind === 'follower') return () => {};
    const removals = [super.observe(observer), this.role.kind === 'primary' ? this.role.served.observe(observer) : undefined];
    return () => {
      for (const remove of removals) remove?.();
    };
  }

  /**
   * Runs a write command another process sent (this process is the shared writer): a batch of plant writes
   * joins the other processes' of this turn in one group commit, and is answered with its own results.
   */
  async serveWrite(command: WireCommand): Promise<ServedWrite> {
    try {
      if (this.closed) throw new Error('store closed');
      const role = this.role;
      if (command.name !== 'plants' || role.kind !== 'primary') return { reply: writesHere(role) ? role.writer.serve(command) : await role.transport.send(command), wroteEvents: false };
      const results = await role.served.submit(command.args[0] as WireItems);
      return { reply: { ok: true, result: results }, wroteEvents: wroteAny(results) };
    } catch (err) {
      return { reply: failedReply(err), wroteEvents: false };
    }
  }

  /** Prepared statements need the schema, so they are made on first use, after migrating. */
  private statements() {
    return (this.prepared ??= this.prepare());
  }

  private prepare() {
    const db = this.db;
    return {
      getPlant: db.prepare('SELECT id, name, tag, version FROM plants WHERE id = ?').safeIntegers(true),
      countPlants: db.prepare('SELECT count(*) AS n FROM plants').pluck(),
      tokenByHash: db.prepare('SELECT * FROM api_tokens WHERE token_hash = ?'),
      // Ties in insertion order, as on PostgreSQL (its seq column).
      listTokens: db.prepare('SELECT * FROM api_tokens ORDER BY created_at, rowid'),
      firstTokens: db.prepare('SELECT * FROM api_tokens ORDER BY created_at, rowid LIMIT ?'),
      tokensAfter: db.prepare(`SELECT t.* FROM api_tokens t, (SELECT created_at, rowid AS r FROM api_tokens WHERE id = ?) c
        WHERE (t.created_at, t.rowid) > (c.created_at, c.r) ORDER BY t.created_at, t.rowid LIMIT ?`),
      tokenById: db.prepare('SELECT * FROM api_tokens WHERE id = ?'),
      countTokens: db.prepare('SELECT count(*) AS n FROM api_tokens').pluck(),
      ticketByHash: db.prepare(TICKET_BY_HASH_SQL('?')),
    };
  }

  async migrate(migrations: readonly Migration<HistoryPorts>[] = MIGRATIONS): Promise<MigrationResult[]> {
    // Migrating (its data steps included) is the one write of this connection when the writer is another: at
    // start-up, before it serves.
    this.db.pragma('query_only = OFF');
    let results: MigrationResult[];
    try {
      results = await runMigrations(migrationAdapter(this.db), migrations);
    } finally {
      // From here on a write made on this connection by mistake fails (SQLITE_READONLY) instead of taking the
      // write lock on the serving thread.
      if (!writesHere(this.role)) this.db.pragma('query_only = ON');
    }
    // The schema is in place: the write worker can start before the first write.
    if (results.every((r) => r.status !== 'failed')) this.groupCommit.warm();
    return results;
  }

  getPlant(id: bigint): VersionedPlant | undefined {
    const row = this.guard(() => this.statements().getPlant.get(id)) as PlantRow | undefined;
    return row ? versionedPlantOf(row) : undefined;
  }

  async listPlants(query: PlantQuery): Promise<PlantRecord[]> {
    return this.guard(() => this.plantQueries().records(query));
  }

  async listPlantsJson(query: PlantQuery): Promise<PlantPage> {
    return this.guard(() => this.plantQueries().page(query));
  }

  async countMatchingPlants(query: PlantQuery): Promise<bigint> {
    // A count reads every match: on the count thread, so the event loop goes on serving meanwhile. An
    // in-memory database exists on this connection only.
    if (this.counts === undefined) return this.guard(() => this.plantQueries().count(query));
    if (this.closed) throw new StoreUnavailableError(new Error('store closed'));
    return this.counts.count(query);
  }

  private listQueries?: SqlitePlantQueries;

  /** The list statements, built from each query's description (sqlite-plant-queries.ts). */
  private plantQueries(): SqlitePlantQueries {
    return (this.listQueries ??= new SqlitePlantQueries(this.db));
  }

  async countPlants(): Promise<number> {
    return this.guard(() => this.statements().countPlants.get()) as number;
  }

  async insertToken(t: TokenRecord): Promise<void> {
    await this.writeCommand('insertToken', t);
  }

  async findTokenByHash(hash: string): Promise<TokenRecord | undefined> {
    const row = this.guard(() => this.statements().tokenByHash.get(hash)) as TokenRow | undefined;
    return row ? tokenOf(row) : undefined;
  }

  async listTokens(): Promise<TokenRecord[]> {
    return (this.guard(() => this.statements().listTokens.all()) as TokenRow[]).map((r) => tokenOf(r));
  }

  async tokensPage(limit: number, after?: string): Promise<TokenRecord[]> {
    const rows = this.guard(() => (after === undefined ? this.statements().firstTokens.all(limit) : this.statements().tokensAfter.all(after, limit))) as TokenRow[];
    return rows.map((r) => tokenOf(r));
  }

  async findTokenById(id: string): Promise<TokenRecord | undefined> {
    const row = this.guard(() => this.statements().tokenById.get(id)) as TokenRow | undefined;
    return row ? tokenOf(row) : undefined;
  }

  async revokeToken(id: string, at: Date): Promise<boolean> {
    return this.writeCommand('revokeToken', id, at);
  }

  async countTokens(): Promise<number> {
    return this.guard(() => this.statements().countTokens.get()) as number;
  }

  async touchTokens(lastUsed: ReadonlyMap<string, Date>): Promise<void> {
    if (lastUsed.size === 0) return;
    await this.writeCommand('touchTokens', [...lastUsed]);
  }

  async insertTicket(t: TicketRecord, expiredBefore: Date): Promise<void> {
    await this.writeCommand('insertTicket', t, expiredBefore);
  }

  async findTicketByHash(hash: string): Promise<StoredTicket | undefined> {
    const row = this.guard(() => this.statements().ticketByHash.get(hash)) as TicketRow | undefined;
    return row ? ticketOf(row) : undefined;
  }

  async ping(): Promise<void> {
    // Reads a page of the file, so an unreadable or vanished database fails the check.
    this.guard(() => this.db.prepare('SELECT count(*) FROM schema_migrations').get());
  }

  async sizeBytes(): Promise<number | undefined> {
    if (this.file === ':memory:') return undefined;
    // The file and its write-ahead log: what a change has cost on disk until the next checkpoint.
    const sizes = await Promise.all(['', '-wal'].map((end) => stat(this.file + end).then((s) => s.size, () => 0)));
    return sizes[0]! + sizes[1]!;
  }

  protected async release(): Promise<void> {
    if (this.role.kind === 'primary') await this.role.served.drain();
    await this.counts?.close();
    this.db.close();
    this.unmark?.();
  }

  /**
   * Bulk create (plant-store import): the plants in one transaction and one fsync, outside the group commit,
   * by the same writer and rule as createPlant, row by row (a plant after another with its id in the same
   * batch sees it), each new plant with its event (sequenced by the next serve).
   */
  async importPlants(plants: readonly PlantRecord[]): Promise<CreateOutcome[]> {
    if (this.closed) throw new StoreUnavailableError(new Error('store closed'));
    const items = plants.map((plant): PlantWrite => ({ op: 'create', plant }));
    const role = this.role;
    if (writesHere(role)) return role.writer.plants(items) as CreateOutcome[];
    return decodeOutcomes(await this.command('plants', encodeItems(items))) as CreateOutcome[];
  }

  /**
   * A batch of plant writes on the write worker. With tracing on it is timed there, and its statements (BEGIN
   * IMMEDIATE included) and its COMMIT (the WAL write and fsync) become spans under the running commit span.
   */
  private async workerBatch(wire: WireItems): Promise<WireOutcomes> {
    if (!tracing.on) return this.command('plants', wire);
    const { results, timing } = await this.command('plantsTimed', wire);
    recordBatchSpans(timing);
    return results;
  }

  /** Runs a write command on the writer; refused once the store is closing. */
  private writeCommand<N extends CommandName>(name: N, ...args: ArgsOf<N>): Promise<ResultOf<N>> {
    if (this.closed) return Promise.reject(new StoreUnavailableError(new Error('store closed')));
    return this.command(name, ...args);
  }

  /**
   * A command on the writer: run as it is on this thread's, or through the transport in the one codec; what
   * fails is a StoreUnavailableError (503).
   */
  private async command<N extends CommandName>(name: N, ...args: ArgsOf<N>): Promise<ResultOf<N>> {
    const role = this.role;
    if (writesHere(role)) return role.writer.run(name, args);
    let reply: WireReply;
    try {
      reply = await role.transport.send({ name, args });
    } catch (err) {
      throw asStoreError(err);
    }
    return resultOf<N>(reply);
  }

  /** Driver failures become StoreUnavailableError (503); programming errors would too, and are logged. */
  private guard<T>(fn: () => T): T {
    if (this.closed) throw new StoreUnavailableError(new Error('store closed'));
    try {
      return fn();
    } catch (err) {
      throw new StoreUnavailableError(err);
    }
  }
}
