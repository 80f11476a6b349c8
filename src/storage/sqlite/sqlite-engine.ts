// The SQLite engine as the rest of the service sees it (storage/engines.ts lists it): its DATABASE_URL
// (`sqlite:PATH` relative to the working directory, `sqlite:///abs`, or `sqlite::memory:`), how an operator is
// told of the database, the file backup, restore and Litestream work on, what it can do with that file (its
// backups, replication), and how its store opens. It adds no settings.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Engine } from '../store.js';
import type { EngineTools } from '../engine-tools.js';
import { SqliteStore, type SqliteOptions } from './sqlite-store.js';
import { runningOnFile } from './serving-mark.js';
import { MIGRATIONS } from './migrations.js';
import { backupSqlite, BOOKKEEPING_TABLES, inspectBackup, inspectTarget, lastVersionIn, resolvedFolder, restoreSqlite, storeFileNamed } from './sqlite-backup.js';

/** The file a `sqlite:` URL names (absolute) or `:memory:`; undefined for any other URL, a bare `sqlite:` included. */
function fileOf(url: string): string | undefined {
  if (!url.startsWith('sqlite:')) return undefined;
  const path = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
  if (path === '') return undefined;
  return path === ':memory:' ? path : resolve(path);
}

/** The file of a URL this engine accepts. */
function fileIn(url: string): string {
  const file = fileOf(url);
  if (file === undefined) throw new Error(`not a sqlite: DATABASE_URL: ${url.split(':')[0]}`);
  return file;
}

export const sqliteEngine: Engine<SqliteOptions> & EngineTools<object> = {
  urlForm: 'sqlite:PATH',
  urlNotes: 'relative to the working directory; folder and file are created',
  accepts: (url) => fileOf(url) !== undefined,
  describe: (url) => `the SQLite database ${fileIn(url)}`,
  localFile(url) {
    const file = fileIn(url);
    return file === ':memory:' ? { inMemory: true } : { file };
  },
  settings: [],
  backups: {
    backup: (file, to) => backupSqlite(file, resolvedFolder(to)),
    inspect: inspectBackup,
    inspectTarget,
    lastVersionIn,
    restore: restoreSqlite,
    storeFileNamed,
    bookkeepingTables: BOOKKEEPING_TABLES,
    schemaVersion: Math.max(...MIGRATIONS.map((m) => m.version)),
  },
  replicates: true,
  absent(url) {
    const file = fileIn(url);
    if (file === ':memory:' || existsSync(file)) return undefined;
    return `There is no SQLite database at ${file} (DATABASE_URL is resolved against the working directory, ${process.cwd()})`;
  },
  // Processes writing one file would queue on its lock (SQLite's busy handler sleeps in milliseconds): one of them
  // commits for all, in shared group commits. A memory database lives in one process only.
  sharing: (url) => (url === 'sqlite::memory:' ? 'one-process' : 'shared-writer'),
  create: (url, options) => new SqliteStore(fileIn(url), options),
  async runningServers(url) {
    const file = fileIn(url);
    return file === ':memory:' ? [] : runningOnFile(file);
  },
};
