// The store as a whole: each feature's port (plants, tokens, webhooks) plus what every engine shares
// (migrations, health, commit observations, closing). Services depend on their feature's port, never on a driver.
import type { TokenStore } from '../auth/token.js';
import type { TicketStore } from '../auth/stream-tickets.js';
import type { PlantStore } from '../plants/plant.js';
import type { WebhookStore } from '../webhooks/delivery.js';
import type { EventLogStore } from '../events/event-log.js';
import type { Observer } from '../observations/observations.js';
import type { Migration, MigrationResult } from './migrator.js';
import type { RestoreStore } from './restores.js';
import type { WireCommand, WireReply, WriteTransport } from './writer-wire.js';

/**
 * Another process that runs every write of this store and sequences its events: with WORKERS > 1 on SQLite,
 * the primary process, so that one writer group-commits every worker's writes (process/primary.ts). It carries the
 * engine's write commands (writer-wire.ts) there and their replies back.
 */
export interface SharedWriter extends WriteTransport {
  /** Calls `listener` whenever the writer has given events their feed positions; returns its removal. */
  watch(listener: () => void): () => void;
}

/** A command another process sent, run by this store's writer: its reply, and whether it wrote events. */
export interface ServedWrite {
  reply: WireReply;
  wroteEvents: boolean;
}

export interface Store extends PlantStore, TokenStore, TicketStore {
  readonly engine: string;
  /**
   * Applies pending migrations in order; stops at the first failure, which it reports. The engine's schema
   * history unless a caller (a test) gives its own list.
   */
  migrate(migrations?: readonly Migration[]): Promise<MigrationResult[]>;
  readonly webhooks: WebhookStore;
  readonly events: EventLogStore;
  /** Where a restore from a backup is recorded (plant-store restore, migrate --after-restore). */
  readonly restores: RestoreStore;
  /** Throws when the store cannot answer. */
  ping(): Promise<void>;
  /** Connections the database server accepts from ordinary users at most (a database server only). */
  connectionLimit?(): Promise<number>;
  /** The store's size on disk in bytes; undefined where it has none (a database in memory). */
  sizeBytes(): Promise<number | undefined>;
  /** Commits whatever is pending, then releases the database. */
  close(): Promise<void>;
  /**
   * Reports every group commit of plant writes this process runs to `observer` (a `commit` observation: how
   * many writes it held, how long it took, whether it committed); returns its removal.
   */
  observe(observer: Observer): () => void;
  /** Runs a write command a process sharing this writer sent (an engine whose sharing is `shared-writer`). */
  serveWrite?(command: WireCommand): Promise<ServedWrite>;
}

/** What every engine's options carry besides its own. */
export interface EngineOptions {
  /** Wraps the engine's webhook port: open-store.ts composes secrets at rest (webhooks/secret-box.ts) here. */
  decorateWebhooks?: (port: WebhookStore) => WebhookStore;
  /**
   * Set by the process that owns a running server (alone, or the primary): the ids of the WEBHOOK_SECRET_KEYS it
   * holds, which the engine shows other processes for as long as it runs (Engine.runningServers).
   */
  serving?: { keyIds: readonly string[] };
}

/** A server running on a database, as another process sees it (Engine.runningServers). */
export interface RunningServer {
  /** Which one, for an operator: a process id, a client address. */
  where: string;
  /** The ids of the WEBHOOK_SECRET_KEYS it holds, in its order; undefined when it does not say. */
  keyIds?: readonly string[];
}

/**
 * An engine: the DATABASE_URLs it serves and what they say, and how it opens one. Its folder exports it and
 * engines.ts lists it; the settings, the CLI and open-store.ts ask it rather than name it.
 */
export interface Engine<Options> {
  /** How an operator writes its DATABASE_URL (`sqlite:PATH`): the settings' refusal of a URL no engine serves lists these. */
  readonly urlForm: string;
  /** What an operator should know of that form, for the setting's description. */
  readonly urlNotes: string;
  /** Whether `databaseUrl` names this engine: then this engine alone reads it. */
  accepts(databaseUrl: string): boolean;
  /** What the settings say is wrong with a URL this engine accepts, after the URL itself ("is not a valid ..."); undefined when nothing is. */
  urlProblem?(databaseUrl: string): string | undefined;
  /** The database for an operator, never with its password: "the SQLite database /srv/data/plant-store.db". */
  describe(databaseUrl: string): string;
  /** Where the database lies on this machine, for what copies or follows its file (backup, restore, Litestream); undefined for a server's. */
  localFile(databaseUrl: string): LocalFile | undefined;
  /** For an engine with no local file: the tools that copy its databases, as the refusals of backup, restore and REPLICA_URL name them. */
  readonly ownTools?: { backup: string; restore: string; replica: string };
  /**
   * A database that opening would create (a file): that it does not exist yet, as said to an operator
   * ("There is no ... at ..."); undefined when it exists or opening never creates one.
   */
  absent?(databaseUrl: string): string | undefined;
  /** An error opening the database that says it does not exist: that, as said to an operator, and the command that creates it. */
  absentFrom?(databaseUrl: string, err: unknown): { said: string; create: string } | undefined;
  create(databaseUrl: string, options: Options): Store;
  /**
   * How several server processes can share the database: each on its own (`independent`: a database server),
   * with every write committed by one of them (`shared-writer`: a file), or not at all (`one-process`: memory).
   */
  sharing(databaseUrl: string): ProcessSharing;
  /**
   * The servers running on the database now, other than this process (plant-store secrets rotate checks their
   * keys before encrypting under a new one). None for a database no other process can open.
   */
  runningServers(databaseUrl: string, options: Options): Promise<RunningServer[]>;
}

/** A database on this machine: its file, or memory only the process that opened it reaches. */
export type LocalFile = { file: string } | { inMemory: true };

export type ProcessSharing = 'independent' | 'shared-writer' | 'one-process';
