// The embedded engine: better-sqlite3 in WAL mode with synchronous=FULL, and group commit so that durability
// (one fsync per commit) does not cap throughput at one request per fsync. Creates commit on a write worker
// (its own connection) so their fsync never blocks the event loop; everything else uses this connection.
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { StorePathError, StoreUnavailableError } from '../errors.js';
import type { CommitObserver, Engine, EngineOptions, MigrationResult, SharedWriter, Store } from '../store.js';
import { decideCreate, type CreateOutcome, type PlantPage, type PlantQuery, type PlantRecord, type PlantWrite, type VersionedPlant, type WriteResult } from '../../plants/plant.js';
import type { OutboxEvent, WebhookStore } from '../../webhooks/delivery.js';
import type { TokenRecord } from '../../auth/token.js';
import { createBatchWriter, writeResultsOf } from './plant-batch.js';
import { createOwnerOnlyFile, FOLDER_MODE, makeFolders } from './folders.js';
import { tokenOf, versionedPlantOf, type PlantRow, type TokenRow } from '../rows.js';
import { SqlitePlantQueries } from './sqlite-plant-queries.js';
import { GroupCommittedPlants } from '../plant-writes.js';
import { Batcher, type BatchCommitter } from '../batcher.js';
import { MIGRATIONS } from './migrations.js';
import { runMigrations, type Migration, type MigrationAdapter } from '../migrator.js';
import { WorkerCommitter } from './worker-committer.js';
import { SqliteWebhookStore } from './sqlite-webhooks.js';
import { SqliteEventStore, type EventPassRunner } from './sqlite-events.js';
import { SqliteRestoreStore } from './sqlite-restores.js';
import { createEventJobs, type EventJobs } from './event-jobs.js';
import { configureConnection } from './connection-setup.js';
import { parseDatabaseUrl } from '../database-url.js';

export interface SqliteOptions extends EngineOptions {
  /** How long a write waits for another process's lock (the CLI) before failing. */
  busyTimeoutMs?: number;
  /**
   * Commits go to this writer (the primary process of a multi-process server) instead of a write worker of
   * this process, which then neither sequences events nor removes old ones: the writer does.
   */
  sharedWriter?: SharedWriter;
  /**
   * Commit on this connection, on the calling thread, instead of a write worker: for a process that does little
   * but commit (a multi-process server's primary), where the thread's two hops per commit cost more than the
   * fsync it keeps off the event loop.
   */
  commitOnThisThread?: boolean;
}

/** Batches a worker may have at the shared writer at once (each is one turn of its event loop). */
const SHARED_WRITER_BATCHES_IN_FLIGHT = 64;

/** `sqlite:path` (relative to the working folder) or `sqlite::memory:`. */
export const sqliteEngine: Engine<SqliteOptions> = {
  accepts: (url) => parseDatabaseUrl(url)?.engine === 'sqlite',
  // Processes writing one file would queue on its lock (SQLite's busy handler sleeps in milliseconds): one of them
  // commits for all, in shared group commits. A memory database lives in one process only.
  sharing: (url) => (url === 'sqlite::memory:' ? 'one-process' : 'shared-writer'),
  create(url, options) {
    const parsed = parseDatabaseUrl(url);
    if (parsed?.engine !== 'sqlite') throw new Error(`not a sqlite: DATABASE_URL: ${url.split(':')[0]}`);
    return new SqliteStore(parsed.file, options);
  },
};

export class SqliteStore extends GroupCommittedPlants implements Store {
  readonly engine = 'sqlite';
  private readonly db: Database.Database;
  protected readonly groupCommit: Batcher<PlantWrite, WriteResult>;
  protected closed = false;

  private prepared?: ReturnType<SqliteStore['prepare']>;
  private batchWriter?: ReturnType<typeof createBatchWriter>;
  readonly webhooks: WebhookStore;
  readonly events: SqliteEventStore;
  readonly restores: SqliteRestoreStore;
  private eventJobs?: EventJobs;

  constructor(readonly file: string, options: SqliteOptions = {}) {
    super();
    try {
      if (file !== ':memory:') makeFolders(dirname(file), FOLDER_MODE);
    } catch (err) {
      throw new StorePathError(`cannot create the folder ${dirname(file)} for the SQLite database ${file}: ${(err as Error).message}`, { cause: err });
    }
    try {
      // Made owner-only before SQLite opens it: SQLite would create it with the umask's mode, and gives its
      // -wal, -shm and -journal files the mode of the database file.
      if (file !== ':memory:') createOwnerOnlyFile(file);
    } catch (err) {
      if ((err as { code?: string }).code !== 'EEXIST') {
        throw new StorePathError(`cannot create the SQLite database ${file}: ${(err as Error).message}`, { cause: err });
      }
    }
    try {
      this.db = new Database(file, { timeout: options.busyTimeoutMs ?? 5_000 });
    } catch (err) {
      throw new StorePathError(`cannot open the SQLite database ${file}: ${(err as Error).message}`, { cause: err });
    }
    try {
      // The first read of the file happens here, so a file that is not a database fails here.
      configureConnection(this.db, options.busyTimeoutMs ?? 5_000);
    } catch (err) {
      this.db.close();
      throw new StorePathError(`cannot use ${file} as a SQLite database: ${(err as Error).message}`, { cause: err });
    }
    const webhooks = new SqliteWebhookStore(this.db, (fn) => this.guard(fn));
    this.webhooks = options.decorateWebhooks?.(webhooks) ?? webhooks;
    this.restores = new SqliteRestoreStore(this.db, (fn) => this.guard(fn));
    // An in-memory database exists only on this connection, so its commits stay on this thread.
    // Prepared on first use, after migrating.
    let committer: BatchCommitter<PlantWrite, WriteResult>;
    let passes: EventPassRunner;
    const shared = options.sharedWriter;
    if (shared) {
      committer = { commit: (items) => shared.commit(items) };
      // The writer's sequencer runs the passes; this process's feed readers wake when it says so.
      passes = { sequence: async () => ({ events: 0, deliveries: 0, more: false }), removeOlderThan: async () => 0 };
    } else if (file === ':memory:' || options.commitOnThisThread) {
      committer = { commit: async (items) => writeResultsOf(items, this.writer()(items)) };
      const jobs = () => (this.eventJobs ??= createEventJobs(this.db));
      passes = {
        sequence: async (maxDeliveries, now) => this.guard(() => jobs().sequence(maxDeliveries, now)),
        removeOlderThan: async (cutoff, maxEvents) => this.guard(() => jobs().removeOlderThan(cutoff, maxEvents)),
      };
    } else {
      const worker = new WorkerCommitter({ file, busyTimeoutMs: options.busyTimeoutMs ?? 5_000 });
      committer = worker;
      passes = {
        sequence: (maxDeliveries, now) => this.guardAsync(() => worker.sequence(maxDeliveries, now)),
        removeOlderThan: (cutoff, maxEvents) => this.guardAsync(() => worker.removeOlderThan(cutoff, maxEvents)),
      };
    }
    // A shared writer groups what every worker sends: each turn's batch goes at once instead of after the last.
    this.groupCommit = new Batcher(committer, shared ? SHARED_WRITER_BATCHES_IN_FLIGHT : 1);
    this.events = new SqliteEventStore(this.db, (fn) => this.guard(fn), passes, shared ? (listener) => shared.watch(listener) : undefined);
    this.following = shared !== undefined;
  }

  private readonly following: boolean;

  override addCommitObserver(observer: CommitObserver): () => void {
    // The writer's process reports the commits; observed here too, each would count once per process.
    return this.following ? () => {} : super.addCommitObserver(observer);
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
      insertToken: db.prepare(
        'INSERT INTO api_tokens (id, name, token_hash, scopes, created_at, last_used_at, expires_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      ),
      tokenByHash: db.prepare('SELECT * FROM api_tokens WHERE token_hash = ?'),
      // Ties in insertion order, as on PostgreSQL (its seq column).
      listTokens: db.prepare('SELECT * FROM api_tokens ORDER BY created_at, rowid'),
      revokeToken: db.prepare('UPDATE api_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL'),
      countTokens: db.prepare('SELECT count(*) AS n FROM api_tokens').pluck(),
      touchToken: db.prepare('UPDATE api_tokens SET last_used_at = max(coalesce(last_used_at, 0), ?) WHERE id = ?'),
    };
  }

  async migrate(migrations: readonly Migration[] = MIGRATIONS): Promise<MigrationResult[]> {
    const results = await runMigrations(migrationAdapter(this.db), migrations);
    // The schema is in place: the write worker can start and prepare its statements before the first create.
    if (results.every((r) => r.status !== 'failed')) this.groupCommit.warm();
    return results;
  }

  async getPlant(id: bigint): Promise<VersionedPlant | undefined> {
    const row = this.guard(() => this.statements().getPlant.get(id)) as PlantRow | undefined;
    return row ? versionedPlantOf(row) : undefined;
  }

  async listPlants(query: PlantQuery): Promise<PlantRecord[]> {
    return this.guard(() => this.plantQueries().records(query));
  }

  async listPlantsJson(query: PlantQuery): Promise<PlantPage> {
    return this.guard(() => this.plantQueries().page(query));
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
    this.guard(() =>
      this.statements().insertToken.run(t.id, t.name, t.hash, t.scopes.join(' '), t.createdAt.getTime(),
        ms(t.lastUsedAt), ms(t.expiresAt), ms(t.revokedAt)),
    );
  }

  async findTokenByHash(hash: string): Promise<TokenRecord | undefined> {
    const row = this.guard(() => this.statements().tokenByHash.get(hash)) as TokenRow | undefined;
    return row ? tokenOf(row) : undefined;
  }

  async listTokens(): Promise<TokenRecord[]> {
    return (this.guard(() => this.statements().listTokens.all()) as TokenRow[]).map((r) => tokenOf(r));
  }

  async revokeToken(id: string, at: Date): Promise<boolean> {
    return this.guard(() => this.statements().revokeToken.run(at.getTime(), id).changes === 1);
  }

  async countTokens(): Promise<number> {
    return this.guard(() => this.statements().countTokens.get()) as number;
  }

  async touchTokens(lastUsed: ReadonlyMap<string, Date>): Promise<void> {
    if (lastUsed.size === 0) return;
    const { touchToken } = this.statements();
    this.guard(() => this.db.transaction(() => {
      for (const [id, at] of lastUsed) touchToken.run(at.getTime(), id);
    })());
  }

  async ping(): Promise<void> {
    // Reads a page of the file, so an unreadable or vanished database fails the check.
    this.guard(() => this.db.prepare('SELECT count(*) FROM schema_migrations').get());
  }

  protected async release(): Promise<void> {
    this.db.close();
  }

  /**
   * Bulk create (plant-store import): the plants in one transaction and one fsync, outside the group commit,
   * by the same writer and rule as createPlant, row by row (a plant after another with its id in the same
   * batch sees it), each new plant with its event (sequenced by the next serve).
   */
  async importPlants(plants: readonly PlantRecord[]): Promise<CreateOutcome[]> {
    return this.guard(() => {
      const items = plants.map((plant): PlantWrite => ({ op: 'create', plant }));
      return writeResultsOf(items, this.writer()(items)).map((r, i) => decideCreate(plants[i]!, r));
    });
  }

  /** The batch writer on this connection (import, and the group commit of an in-memory database). */
  private writer(): ReturnType<typeof createBatchWriter> {
    return (this.batchWriter ??= createBatchWriter(this.db));
  }

  private async guardAsync<T>(fn: () => Promise<T>): Promise<T> {
    if (this.closed) throw new StoreUnavailableError(new Error('store closed'));
    try {
      return await fn();
    } catch (err) {
      throw err instanceof StoreUnavailableError ? err : new StoreUnavailableError(err);
    }
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

/** SQLite needs no lock around the run: each migration is decided again under the write lock (IMMEDIATE). */
function migrationAdapter(db: Database.Database): MigrationAdapter {
  return {
    locked: (run) => run(),
    ensureHistory: async () => {
      db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT');
    },
    appliedVersions: async () => new Set(db.prepare('SELECT version FROM schema_migrations').pluck().all() as number[]),
    // Another process (a second instance, or `token create` at the same first start) may have applied it since.
    apply: async (m) =>
      db.transaction((): 'applied' | 'already-applied' => {
        if (db.prepare('SELECT 1 FROM schema_migrations WHERE version = ?').get(m.version)) return 'already-applied';
        db.exec(m.sql);
        db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(m.version, m.name, Date.now());
        return 'applied';
      }).immediate(),
  };
}

function ms(d: Date | null): number | null {
  return d ? d.getTime() : null;
}

