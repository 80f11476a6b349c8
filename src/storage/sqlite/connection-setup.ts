// Opening the database file (its folder and the file made owner-only first), and the per-connection settings
// shared by the main connection and the write worker's.
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { StorePathError } from '../../errors/store-errors.js';
import { createOwnerOnlyFile, FOLDER_MODE, makeFolders } from '../../kit/owner-only-files.js';

const pause = new Int32Array(new SharedArrayBuffer(4));

/**
 * WAL + synchronous=FULL: a commit returns only after the WAL is fsynced, so an acknowledged write survives
 * kill -9 and power loss. Switching a fresh file to WAL needs an exclusive lock, and SQLite can answer
 * SQLITE_BUSY there without calling the busy handler when other processes open the same new file at the same
 * moment: retry until the busy timeout, as the busy handler would have.
 */
export function configureConnection(db: Database.Database, busyTimeoutMs: number, autoCheckpoint = true): void {
  const deadline = Date.now() + busyTimeoutMs;
  for (let wait = 5; ; wait = Math.min(wait * 2, 100)) {
    try {
      db.pragma('journal_mode = WAL');
      break;
    } catch (err) {
      if ((err as { code?: string }).code !== 'SQLITE_BUSY' || Date.now() >= deadline) throw err;
      // Start-up only, before the connection serves anything: a synchronous pause is fine here.
      Atomics.wait(pause, 0, 0, wait);
    }
  }
  db.pragma('synchronous = FULL');
  db.pragma('foreign_keys = ON');
  // Under Litestream, checkpoints are its own: it holds a read transaction so that none passes the frames it
  // has not copied yet, and checkpoints once it has. A checkpoint of ours between two of its syncs could end
  // the WAL under it and cost a new generation (a whole snapshot sent again).
  if (!autoCheckpoint) db.pragma('wal_autocheckpoint = 0');
}

/**
 * The store's connection to `file` (`:memory:` included), configured: its folders and the file itself made
 * first, owner-only. Each failure is a StorePathError naming the file and the step that failed.
 */
export function openDatabaseFile(file: string, busyTimeoutMs: number, autoCheckpoint: boolean): Database.Database {
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
  let db: Database.Database;
  try {
    db = new Database(file, { timeout: busyTimeoutMs });
  } catch (err) {
    throw new StorePathError(`cannot open the SQLite database ${file}: ${(err as Error).message}`, { cause: err });
  }
  try {
    // The first read of the file happens here, so a file that is not a database fails here.
    configureConnection(db, busyTimeoutMs, autoCheckpoint);
  } catch (err) {
    db.close();
    throw new StorePathError(`cannot use ${file} as a SQLite database: ${(err as Error).message}`, { cause: err });
  }
  return db;
}
