// `plant-store backup FILE` and `plant-store restore FILE`: an online, checked copy of the SQLite store and
// its way back, done by the engine's backups (EngineTools.backups). PostgreSQL has its own tools for both
// (pg_dump, pg_restore, point-in-time recovery), which these commands point at rather than imitate.
import { randomBytes } from 'node:crypto';
import { existsSync, lstatSync, rmdirSync, rmSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { type Config, loadConfig, storeOptions } from '../config.js';
import { openStore } from '../storage/open-store.js';
import { markRestored, type RestoreRecord } from '../storage/restores.js';
import { BackupError, type BackupSummary, type FileBackups, type TableCounts, type TargetState } from '../storage/engine-tools.js';
import { DatabaseMissingError, describeDatabase } from './database.js';
import { engineOf } from '../storage/engines.js';
import { COMMAND, commandArgs, UsageError } from './subcommand.js';
import { FOLDER_MODE, makeFolders } from '../kit/owner-only-files.js';

export const BACKUP_HELP = `Usage: plant-store backup FILE [--force]

Copies the SQLite store at DATABASE_URL to FILE while the server keeps serving. The copy is one snapshot,
taken in one read transaction (in WAL mode a reader never blocks a writer: commits go on meanwhile), and is
checked before it takes the name FILE: SQLite's integrity check, and each table's row count against the
store's in the same snapshot. FILE is then a whole, checked backup, or does not exist. The copy is written to
a new file of a random name in FILE's folder, then renamed to FILE: a link at FILE is replaced, never written
through. FILE cannot be the store or its -wal, -shm or -journal file (links resolved).
FILE is one self-contained database file, readable by its owner only (0600, whatever the umask). It holds token hashes and webhook
signing secrets: keep it as safe as the database. What was written (rows per table, pending webhook
deliveries, schema version, size) is printed on stdout.

Options:
  --force   Replace FILE if it exists (without it an existing FILE is refused)

On PostgreSQL use pg_dump and pg_restore, or point-in-time recovery (docs/backup.md).
Exit codes: 0 written, 1 failed (nothing is left at FILE), 2 usage.
`;

export const RESTORE_HELP = `Usage: plant-store restore FILE [--force]
       plant-store restore --from-replica [--at TIME] [--force]

Replaces the SQLite store at DATABASE_URL with the backup FILE (made by plant-store backup), then applies
the migrations this version adds and prints what the store now holds. FILE is checked first (SQLite's
integrity check, a plant-store schema no newer than this version). The store must not be in use: stop the
server first. A store that does not exist is created; an empty one (no plants, tokens or webhooks) is
replaced; one that holds data is refused unless --force is given.
The restored store issues no ETag or event version issued before the restore: its version counter moves
above every version the replaced store or the backup issued, and to at least the time in microseconds. A feed
cursor naming an event made after the backup answers 410 (docs/backup.md).

With --from-replica the backup is taken from the replicas of REPLICA_URL (made by serve with Litestream):
the store as it was at its latest sync, or as it was at TIME (RFC 3339, such as 2026-11-28T09:30:00Z),
from the replica that holds the latest copy. Everything else is as for FILE.

Options:
  --force          Replace a store that holds data
  --from-replica   Restore from REPLICA_URL instead of a FILE
  --at TIME        With --from-replica: the store as it was at TIME, not at the latest sync

On PostgreSQL use pg_restore, or point-in-time recovery, then plant-store migrate --after-restore
(docs/backup.md).
Exit codes: 0 restored, 1 failed or refused (the store is unchanged), 2 usage.
`;

const OPTIONS = { force: { type: 'boolean' } } as const;
const RESTORE_OPTIONS = { ...OPTIONS, 'from-replica': { type: 'boolean' }, at: { type: 'string' } } as const;

/** The backup file argument and --force, or undefined after --help. */
function fileArgs(command: string, args: string[], help: string): { file: string; force: boolean } | undefined {
  const parsed = commandArgs(command, args, OPTIONS, help);
  if (!parsed) return undefined;
  const [file, extra] = parsed.positionals;
  if (file === undefined || file === '') throw new UsageError(`"${command}" needs the backup file: ${COMMAND} ${command} FILE.`, command);
  if (extra !== undefined) throw new UsageError(`Unexpected argument "${extra}" for "${command}".`, command);
  return { file: resolve(file), force: parsed.values.force === true };
}

/** The file DATABASE_URL names and its engine's backups; a store with none is pointed at its engine's own tools. */
function storeFile(config: Config, command: 'backup' | 'restore'): { file: string; backups: FileBackups } {
  const engine = engineOf(config.databaseUrl);
  const local = engine.localFile(config.databaseUrl);
  if (local === undefined || engine.backups === undefined) {
    const tool = engine.ownTools?.[command] ?? "the database's own tools";
    throw new Error(
      `${command} works on a SQLite store, and DATABASE_URL names ${describeDatabase(config.databaseUrl)}. ` +
        `Use ${tool} or point-in-time recovery instead: see docs/backup.md.`,
    );
  }
  if ('inMemory' in local) throw new Error(`An in-memory store (${config.databaseUrl}) cannot be ${command === 'backup' ? 'backed up' : 'restored into'}: it exists only inside its server.`);
  return { file: local.file, backups: engine.backups };
}

/** Something at `path`, a dangling link included. */
function fileExists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

export async function backupCommand(args: string[]): Promise<number> {
  const parsed = fileArgs('backup', args, BACKUP_HELP);
  if (!parsed) return 0;
  const config = loadConfig();
  const { file: source, backups } = storeFile(config, 'backup');
  if (!existsSync(source)) {
    throw new DatabaseMissingError(`There is no SQLite database at ${source}: set DATABASE_URL to the database the server uses.`);
  }
  refuseStoreFile(backups, source, parsed.file);
  if (!existsSync(dirname(parsed.file))) throw new Error(`The folder ${dirname(parsed.file)} does not exist: the backup file goes into a folder that does.`);
  // A link at FILE counts as a file there: with --force the link itself is replaced, never written through.
  if (fileExists(parsed.file) && !parsed.force) throw new Error(`${parsed.file} exists. Name a new file, or add --force to replace it.`);
  process.stderr.write(`plant-store: Using ${describeDatabase(config.databaseUrl)}.\n`);
  const summary = await backups.backup(source, parsed.file);
  process.stdout.write(`Backed up ${describeDatabase(config.databaseUrl)} to ${parsed.file} (${describe(summary)}); the integrity check passed.\n`);
  process.stdout.write(rows(backups, summary.counts, summary.pendingDeliveries));
  return 0;
}

export async function restoreCommand(args: string[]): Promise<number> {
  const parsed = commandArgs('restore', args, RESTORE_OPTIONS, RESTORE_HELP);
  if (!parsed) return 0;
  const [first, extra] = parsed.positionals;
  const force = parsed.values.force === true;
  if (parsed.values['from-replica'] !== true) {
    if (parsed.values.at !== undefined) throw new UsageError('--at is for --from-replica: a backup FILE holds one moment.', 'restore');
    if (first === undefined || first === '') throw new UsageError(`"restore" needs the backup file: ${COMMAND} restore FILE (or --from-replica).`, 'restore');
    if (extra !== undefined) throw new UsageError(`Unexpected argument "${extra}" for "restore".`, 'restore');
    const file = resolve(first);
    const config = loadConfig();
    const { file: target, backups } = storeFile(config, 'restore');
    if (!existsSync(file)) throw new Error(`There is no backup file at ${file}.`);
    refuseStoreFile(backups, target, file);
    const state = checkTarget(config, backups, target, force);
    return restoreInto(config, backups, target, state, file, file);
  }
  if (first !== undefined) throw new UsageError(`--from-replica restores from REPLICA_URL: give no FILE (got "${first}").`, 'restore');
  const at = parsed.values.at === undefined ? undefined : rfc3339(parsed.values.at);
  const config = loadConfig();
  const { file: target, backups } = storeFile(config, 'restore');
  if (config.replicaUrls.length === 0) throw new Error('REPLICA_URL is not set: --from-replica restores from the replicas it names (docs/backup.md).');
  const state = checkTarget(config, backups, target, force);
  // A refused restore leaves nothing it made: the folders it creates for the store are removed again.
  const made = missingFolders(dirname(target));
  makeFolders(dirname(target), FOLDER_MODE);
  // Litestream writes the copy next to the store (same disk: the copy into it is local), under a random name.
  const copy = join(dirname(target), `.${basename(target)}.${randomBytes(9).toString('base64url')}.replica`);
  let restored = false;
  try {
    const { from, checked } = await fetchFromReplicas(config, backups, target, copy, at);
    const code = await restoreInto(config, backups, target, state, copy, `${from}${at ? ` as of ${at.toISOString()}` : ''}`, checked);
    restored = true;
    return code;
  } finally {
    for (const suffix of ['', '-wal', '-shm', '-journal', '.tmp', '.tmp-wal', '.tmp-shm', '.tmp-journal']) rmSync(copy + suffix, { force: true });
    // Innermost first; a folder something else was put in meanwhile stays.
    if (!restored) {
      for (const folder of made) {
        try {
          rmdirSync(folder);
        } catch {
          break;
        }
      }
    }
  }
}

/** The folders of `folder`'s path that do not exist yet, innermost first. */
function missingFolders(folder: string): string[] {
  const out: string[] = [];
  for (let f = resolve(folder); !existsSync(f) && dirname(f) !== f; f = dirname(f)) out.push(f);
  return out;
}

/** An RFC 3339 date-time with its offset (2026-11-28T09:30:00Z, 2026-11-28T10:30:00.5+01:00). */
function rfc3339(text: string): Date {
  const t = Date.parse(text);
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i.test(text) || Number.isNaN(t)) {
    throw new UsageError(`--at takes an RFC 3339 time with its offset, such as 2026-11-28T09:30:00Z (got "${text}").`, 'restore');
  }
  return new Date(t);
}

/**
 * Asks Litestream for the store as the replicas hold it (at `at`, or latest) into `copy`: from the replica with
 * the latest copy, or, when one cannot be read or gives a copy that fails SQLite's integrity check (a segment
 * cut off mid-write on a replica that does not write them atomically), from the first of the others that gives a
 * sound one. Returns which replica.
 */
async function fetchFromReplicas(config: Config, backups: FileBackups, database: string, copy: string, at: Date | undefined): Promise<{ from: string; checked: BackupSummary }> {
  const { runLitestream } = await import('../replication/litestream.js');
  const time = at ? ['-timestamp', at.toISOString()] : [];
  // The copy Litestream made, checked (restoreInto checks nothing twice), or why it cannot be used.
  let checked: BackupSummary | undefined;
  const unsound = (): string | undefined => {
    try {
      checked = backups.inspect(copy);
      return undefined;
    } catch (err) {
      if (!(err instanceof BackupError)) throw err;
      return err.message.replace(/\.$/, '');
    }
  };
  const all = await runLitestream(config, database, (file) => ['restore', '-config', file, '-o', copy, ...time, database]);
  const allUnsound = all.code === 0 ? unsound() : undefined;
  if (all.code === 0 && allUnsound === undefined) return { from: `the replicas (${config.replicaUrls.map((r) => r.shown).join(', ')})`, checked: checked! };
  const problems = [`all replicas: ${allUnsound ?? all.errors.at(-1) ?? `litestream exited ${all.code}`}`];
  if (config.replicaUrls.length > 1) {
    for (const r of config.replicaUrls) {
      for (const suffix of ['', '-wal', '-shm']) rmSync(copy + suffix, { force: true });
      const one = await runLitestream(config, database, (file) => ['restore', '-config', file, '-replica', r.name, '-o', copy, ...time, database]);
      const oneUnsound = one.code === 0 ? unsound() : undefined;
      if (one.code === 0 && oneUnsound === undefined) {
        process.stderr.write(`plant-store: Not every replica gave a sound copy (${problems[0]}); restored from ${r.name} (${r.shown}).\n`);
        return { from: `the replica ${r.shown}`, checked: checked! };
      }
      problems.push(`${r.name}: ${oneUnsound ?? one.errors.at(-1) ?? `litestream exited ${one.code}`}`);
    }
  }
  const none = problems.some((p) => p.includes('no matching backups found'));
  throw new Error(
    none && at
      ? `The replicas hold no copy of the store as of ${at.toISOString()} (it is older than their oldest snapshot, or newer than anything replicated): ${problems.join('; ')}.`
      : `Could not restore from the replicas: ${problems.join('; ')}.`,
  );
}

/** What restoring replaces: refused when in use, or when it holds data without --force. */
function checkTarget(config: Config, backups: FileBackups, target: string, force: boolean): TargetState {
  const database = describeDatabase(config.databaseUrl);
  const state = backups.inspectTarget(target);
  if (state.state === 'in-use') throw new Error(`${database} is in use by another process (a running server?). Stop it, then restore.`);
  if (state.state === 'holds' && !force) {
    throw new Error(`${database} holds data (${Object.entries(state.counts).map(([t, n]) => `${n} ${t}`).join(', ')}). Restore into an empty or new database, or add --force to replace it.`);
  }
  return state;
}

/** Replaces `target` with the backup at `source` (checked first), migrates it and records the restore. */
async function restoreInto(
  config: Config,
  backups: FileBackups,
  target: string,
  state: TargetState,
  source: string,
  shown: string,
  checked?: BackupSummary,
): Promise<number> {
  const backup = checked ?? backups.inspect(source);
  const known = backups.schemaVersion;
  if (backup.schemaVersion > known) {
    throw new Error(`${shown} has schema version ${backup.schemaVersion}, newer than this plant-store knows (${known}): restore it with the version that made it.`);
  }
  const database = describeDatabase(config.databaseUrl);
  process.stderr.write(`plant-store: Using ${database}${state.state === 'missing' ? ', which is created now' : ''}.\n`);
  // Read before it is replaced: versions it issued after the backup must not be issued again.
  const replacedVersion = state.state === 'missing' ? undefined : backups.lastVersionIn(target);
  await backups.restore(source, target);
  // Litestream's shadow WAL of the store replaced: the next serve starts a new generation from the restored one.
  rmSync(join(dirname(target), `.${basename(target)}-litestream`), { recursive: true, force: true });
  // And serve's replication status of it (replica status would read the replaced store's figures).
  rmSync(join(dirname(target), `.${basename(target)}-replication.json`), { force: true });
  // The restored store is brought to this version's schema now, not by the first server start.
  const { store } = await openStore(config.databaseUrl, { ...storeOptions(config), commitOnThisThread: true });
  let mark: RestoreRecord;
  try {
    mark = await markRestored(store.restores, new Date(), replacedVersion);
  } finally {
    await store.close();
  }
  const restored = backups.inspect(target);
  process.stdout.write(`Restored ${shown} into ${database} (${describe(restored)}); the integrity check passed.\n`);
  process.stdout.write(rows(backups, restored.counts, restored.pendingDeliveries));
  process.stdout.write(describeRestore(mark));
  return 0;
}

/** A backup file that is the store or one of its files (links resolved) would destroy the store: refused. */
function refuseStoreFile(backups: FileBackups, store: string, file: string): void {
  const which = backups.storeFileNamed(store, file);
  if (which !== undefined) throw new Error(`The backup file ${file} is ${which} (${store}): name a file outside the store's files.`);
}


/** What a restore record means for clients, for the output of restore and migrate --after-restore. */
export function describeRestore(r: RestoreRecord): string {
  const made = r.newestEventAt === null ? 'before now (the backup holds no event)' : `after ${r.newestEventAt.toISOString()} (the backup's newest event)`;
  return (
    `Versions continue above ${r.versionsFrom}: no ETag or event version issued before the restore is issued again.\n` +
    `Feed cursors of events made ${made} that the store does not hold answer 410.\n`
  );
}

function describe(s: BackupSummary): string {
  return `schema version ${s.schemaVersion}, ${s.bytes.toLocaleString('en-US')} bytes`;
}

/** "  plants: 120" a line, every table; deliveries with how many are pending. */
function rows(backups: FileBackups, counts: TableCounts, pending: number): string {
  return Object.entries(counts)
    .filter(([t]) => !backups.bookkeepingTables.has(t))
    .map(([t, n]) => `  ${t}: ${n}${t === 'webhook_deliveries' ? ` (${pending} pending)` : ''}\n`)
    .join('');
}
