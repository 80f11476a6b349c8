// Per-connection settings, shared by the main connection and the write worker's.
import type Database from 'better-sqlite3';

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
