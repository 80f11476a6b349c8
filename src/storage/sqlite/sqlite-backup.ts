// Online backup and restore of a SQLite store with SQLite's backup API. The copy is taken inside one read
// transaction of the source: in WAL mode a reader never blocks writers, so the server keeps committing while
// it runs, and the copy is the database exactly as it was at one commit. Nothing here knows about the CLI.
import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, lstatSync, openSync, readlinkSync, realpathSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { createOwnerOnlyFile, FOLDER_MODE, makeFolders } from '../../kit/owner-only-files.js';
import { BackupError, type BackupSummary, type TableCounts, type TargetState } from '../engine-tools.js';

// Bookkeeping tables: a database holding only these is empty (a migrated, never used store).
export const BOOKKEEPING_TABLES: ReadonlySet<string> = new Set(['schema_migrations', 'plant_version_counter', 'event_log', 'store_restores', '_litestream_seq', '_litestream_lock']);

// One backup step copies every page: a copy taken in steps restarts whenever another connection commits,
// so under steady writes it might never finish. The most better-sqlite3 accepts.
const ALL_PAGES = 0x7fffffff;

// The tables that hold data: an index kept as tables (the FTS5 table of names and its shadow tables) is not.
function tables(db: Database.Database): string[] {
  return db
    .prepare("SELECT name FROM pragma_table_list WHERE schema = 'main' AND type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name")
    .pluck()
    .all() as string[];
}

function countsOf(db: Database.Database): TableCounts {
  return Object.fromEntries(tables(db).map((t) => [t, db.prepare(`SELECT count(*) FROM "${t.replace(/"/g, '""')}"`).pluck().get() as number]));
}

function summaryOf(db: Database.Database, file: string): BackupSummary {
  const counts = countsOf(db);
  if (counts.schema_migrations === undefined) throw new BackupError(`${file} is a SQLite database but not a plant-store one (it has no schema_migrations table).`);
  const schemaVersion = db.prepare('SELECT coalesce(max(version), 0) FROM schema_migrations').pluck().get() as number;
  const pendingDeliveries =
    counts.webhook_deliveries === undefined ? 0 : (db.prepare("SELECT count(*) FROM webhook_deliveries WHERE status = 'pending'").pluck().get() as number);
  return { counts, pendingDeliveries, schemaVersion, bytes: statSync(file).size };
}

function integrityCheck(db: Database.Database, file: string): void {
  const problems = db.prepare('PRAGMA integrity_check(10)').pluck().all() as string[];
  if (problems.length !== 1 || problems[0] !== 'ok') throw new BackupError(`${file} fails SQLite's integrity check: ${problems.join('; ')}.`);
}

function openExisting(file: string, options: Database.Options = {}): Database.Database {
  let db: Database.Database;
  try {
    db = new Database(file, { fileMustExist: true, ...options });
    // The first read happens here: a file that is not a database fails now, with SQLite's words.
    db.prepare('SELECT count(*) FROM sqlite_schema').get();
  } catch (err) {
    throw new BackupError(`${file} cannot be read as a SQLite database (${(err as Error).message.replace(/\.$/, '')}).`, { cause: err });
  }
  return db;
}

/** fsync a file, or the folder holding a file just renamed, so the rename survives a power cut. */
function fsyncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Copies the store at `source` to `target` while other processes keep writing to it, then checks the copy
 * (SQLite's integrity check, and each table's row count against the source's in the copied snapshot) before
 * it takes the name `target`: a failed or interrupted backup leaves no file there. The copy is one file
 * (rollback journal, not WAL), readable by the owner only.
 */
export async function backupSqlite(source: string, target: string, options: { busyTimeoutMs?: number } = {}): Promise<BackupSummary> {
  // A random name in the target's folder, created here exclusively: a link or file planted at a name known
  // in advance cannot redirect the copy, and the copy, with its secrets, is never readable by others.
  const partial = join(dirname(target), `.${basename(target)}.${randomBytes(9).toString('base64url')}.partial`);
  const db = openExisting(source, { timeout: options.busyTimeoutMs ?? 5_000 });
  let created: { dev: number; ino: number } | undefined;
  try {
    // An empty file is a valid empty database.
    created = createOwnerOnlyFile(partial);
    let expected: TableCounts;
    db.exec('BEGIN');
    try {
      // The first read fixes the snapshot that both the counts and the copy see.
      expected = countsOf(db);
      await db.backup(partial, { progress: () => ALL_PAGES });
    } finally {
      db.exec('COMMIT');
    }
    const copy = openExisting(partial);
    let summary: BackupSummary;
    try {
      copy.pragma('journal_mode = DELETE');
      integrityCheck(copy, target);
      summary = summaryOf(copy, partial);
    } finally {
      copy.close();
    }
    for (const [table, n] of Object.entries(expected)) {
      if (summary.counts[table] !== n) throw new BackupError(`The copy has ${summary.counts[table] ?? 'no'} rows in ${table} where the store had ${n}; nothing was written to ${target}.`);
    }
    fsyncPath(partial);
    // The name still holds the regular file made above, not something put in its place meanwhile.
    const now = lstatSync(partial);
    if (!now.isFile() || now.dev !== created.dev || now.ino !== created.ino) throw new BackupError(`${partial} was replaced while the backup ran; nothing was written to ${target}.`);
    renameSync(partial, target);
    fsyncPath(dirname(target));
    return summary;
  } catch (err) {
    // Only what this backup made: a name it could not create exclusively belongs to someone else.
    if (created) rmSync(partial, { force: true });
    rmSync(`${partial}-journal`, { force: true });
    throw err;
  } finally {
    db.close();
  }
}

/** Reads a backup file and checks it: SQLite's integrity check, and the schema of a plant-store store. */
export function inspectBackup(file: string): BackupSummary {
  // Not read-only: a read-only connection cannot open a WAL database whose -shm file is gone.
  const db = openExisting(file);
  try {
    integrityCheck(db, file);
    return summaryOf(db, file);
  } finally {
    db.close();
  }
}

/**
 * Begins an exclusive transaction on `db` (opened with no busy timeout), or answers false when another process
 * has the file open: every connection to a WAL database keeps a shared lock for as long as it is open.
 */
export function takeExclusive(db: Database.Database): boolean {
  try {
    db.pragma('locking_mode = EXCLUSIVE');
    db.exec('BEGIN EXCLUSIVE');
    return true;
  } catch (err) {
    if ((err as { code?: string }).code?.startsWith('SQLITE_BUSY')) return false;
    throw err;
  }
}

/**
 * What restoring into `file` would replace: nothing, an empty store, or rows. A database another process
 * has open (a running server holds a shared lock on a WAL database for as long as it runs) is in use.
 */
export function inspectTarget(file: string): TargetState {
  let size: number;
  try {
    size = statSync(file).size;
  } catch (err) {
    if ((err as { code?: string }).code === 'ENOENT') return { state: 'missing' };
    throw err;
  }
  if (size === 0) return { state: 'empty' };
  const db = openExisting(file, { timeout: 0 });
  try {
    if (!takeExclusive(db)) return { state: 'in-use' };
    const counts = countsOf(db);
    db.exec('COMMIT');
    const rows = Object.entries(counts).filter(([t, n]) => !BOOKKEEPING_TABLES.has(t) && n > 0);
    return rows.length === 0 ? { state: 'empty' } : { state: 'holds', counts: Object.fromEntries(rows) };
  } finally {
    db.close();
  }
}

/**
 * The last plant version the store at `file` issued, or undefined when there is none to read (no file, not a
 * plant-store database, or one that cannot be read): a restore replacing it moves the counter past it.
 */
export function lastVersionIn(file: string): bigint | undefined {
  let db: Database.Database | undefined;
  try {
    db = openExisting(file, { timeout: 0 });
    return (db.prepare('SELECT last FROM plant_version_counter').pluck().safeIntegers(true).get() as bigint | undefined) ?? undefined;
  } catch {
    return undefined;
  } finally {
    db?.close();
  }
}

/**
 * Replaces the database at `target` (created if missing, owner-only) with the backup at `source`, page for
 * page through the backup API, so SQLite writes it as one transaction, WAL included. The caller has checked
 * with inspectTarget that no process has the target open.
 */
export async function restoreSqlite(source: string, target: string): Promise<void> {
  const created = !fileExists(target);
  makeFolders(dirname(target), FOLDER_MODE);
  if (created) createOwnerOnlyFile(target);
  else if (!statSync(target).isFile()) throw new BackupError(`${target} is not a regular file: it cannot be a SQLite store.`);
  const db = openExisting(source);
  try {
    await db.backup(target, { progress: () => ALL_PAGES });
  } catch (err) {
    if (created) rmSync(target, { force: true });
    throw err;
  } finally {
    db.close();
  }
}

/** Something at `path`, a dangling link included. */
export function fileExists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/** The files of a SQLite store besides the database: SQLite makes them next to it, with these suffixes. */
const STORE_SUFFIXES = ['', '-wal', '-shm', '-journal'];

/** `path` with its folder's links resolved (the file itself need not exist), or as given if the folder does not exist. */
export function resolvedFolder(path: string): string {
  try {
    return join(realpathSync(dirname(path)), basename(path));
  } catch {
    return path;
  }
}

/**
 * Which of the store's files `file` is, after resolving links (of its folder, and `file` itself when it is a
 * link): "the store", "the store's -wal file" and so on, or undefined for a file that is none of them.
 */
export function storeFileNamed(store: string, file: string): string | undefined {
  const names = new Set([file, resolvedFolder(file)]);
  try {
    names.add(realpathSync(file));
  } catch {
    // Nothing there, or a dangling link (to a -wal or -journal file not made yet, say): where it points counts.
    try {
      if (lstatSync(file).isSymbolicLink()) names.add(resolvedFolder(resolve(dirname(file), readlinkSync(file))));
    } catch {
      // Nothing there.
    }
  }
  const stores = new Set([store, resolvedFolder(store)]);
  try {
    stores.add(realpathSync(store));
  } catch {
    // A store not made yet (restore creates it).
  }
  for (const s of stores) {
    for (const suffix of STORE_SUFFIXES) {
      if (names.has(s + suffix)) return suffix === '' ? 'the store' : `the store's ${suffix} file`;
    }
  }
  return undefined;
}
