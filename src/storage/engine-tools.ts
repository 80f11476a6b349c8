// What an engine declares besides opening its store (store.ts, Engine): the settings rows it adds, which
// config.ts joins, and what it can do with its database, which the CLI and serve ask for through engines.ts
// rather than import the engine's folder.
import type { SettingRows } from '../kit/settings.js';

export interface EngineTools<Settings> {
  /** The settings it adds, printed after DATABASE_URL in the engines' order. */
  readonly settings: SettingRows<Settings>;
  /** plant-store backup and restore of its file; absent where the database's own tools do it (Engine.ownTools). */
  readonly backups?: FileBackups;
  /** Whether Litestream may follow its file (REPLICA_URL): serve replicates it, restore --from-replica reads it back. */
  readonly replicates?: boolean;
}

/** Rows per table (every table of the schema, so a table added later is counted and checked too). */
export type TableCounts = Record<string, number>;

export interface BackupSummary {
  /** Rows per table in the copy, equal to the source's in the copied snapshot. */
  counts: TableCounts;
  /** Pending webhook deliveries in the copy. */
  pendingDeliveries: number;
  /** The highest applied migration. */
  schemaVersion: number;
  bytes: number;
}

/** A file that cannot be used as asked; the message says why, for a person. */
export class BackupError extends Error {
  override name = 'BackupError';
}

export type TargetState =
  | { state: 'missing' }
  | { state: 'empty' }
  | { state: 'in-use' }
  | { state: 'holds'; counts: TableCounts };

/** A database that is one file: its online copy, the check of a copy, and the way back. */
export interface FileBackups {
  /** Copies the database at `file` to `to` (links in its folder resolved) while it serves; nothing is left at `to` on failure. */
  backup(file: string, to: string): Promise<BackupSummary>;
  /** Reads a backup and checks it; throws BackupError saying why it cannot be used. */
  inspect(file: string): BackupSummary;
  /** What restoring into `file` would replace; `in-use` while another process has it open. */
  inspectTarget(file: string): TargetState;
  /** The last plant version the database at `file` issued, or undefined when there is none to read. */
  lastVersionIn(file: string): bigint | undefined;
  /** Replaces the database at `file` (created if missing) with the backup at `from`. */
  restore(from: string, file: string): Promise<void>;
  /** Which of the database's files `path` is ("the store", "the store's -wal file"), links resolved; undefined for none. */
  storeFileNamed(file: string, path: string): string | undefined;
  /** Tables that hold bookkeeping, not data: left out of the counts shown. */
  readonly bookkeepingTables: ReadonlySet<string>;
  /** The newest schema version this build knows: a backup of a newer one is refused. */
  readonly schemaVersion: number;
}
