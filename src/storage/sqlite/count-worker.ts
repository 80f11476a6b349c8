// The count thread of a SQLite store (count-reader.ts): its own connection, which only reads, runs the counts
// of `Prefer: count=exact` (sqlite-plant-queries.ts, the same statements as on the main connection), so a
// count that reads every match of a common filter holds this thread, not the event loop. WAL lets it read
// beside the writer; each count reads one snapshot.
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import type { PlantQuery } from '../../plants/plant.js';
import { answerParent } from '../../kit/thread-link.js';
import { SqlitePlantQueries } from './sqlite-plant-queries.js';

export interface CountData {
  file: string;
  busyTimeoutMs: number;
}
/** What the count thread answers. */
export type CountMethods = { count(query: PlantQuery): bigint; close(): void };

const { file, busyTimeoutMs } = workerData as CountData;

// On Linux, the lowest scheduling priority (nice 19) for this thread alone (/proc/thread-self names its thread
// id, which setpriority takes): on a core shared with the event loop, serving requests always comes first and
// a count takes what is left. Elsewhere it runs at the process's priority.
try {
  setPriority(Number(readlinkSync('/proc/thread-self').split('/').pop()), 19);
} catch {
  // no /proc, or not allowed: the count lane still bounds counts to this one thread
}
answerParent<CountMethods>(() => {
  const db = new Database(file, { timeout: busyTimeoutMs, fileMustExist: true });
  // This connection never writes: a statement that would fails instead of taking the write lock.
  db.pragma('query_only = ON');
  const queries = new SqlitePlantQueries(db);
  return {
    count: (query) => queries.count(query),
    close: () => {
      db.close();
    },
  };
});
