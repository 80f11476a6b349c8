// The migration runner for every engine: numbered migrations applied in order, each in its own transaction,
// stopping at the first failure, which is reported as data, then the data steps the migrations carry. The
// engine's adapter says how to lock, read the applied versions and apply one migration, and gives the ports
// the data steps run over; the rules (order, skipping, refusing a newer database, when data steps run) live here.

/** One step of a schema history. Append only: a released migration is never edited. */
export interface Migration<Ports = unknown> {
  version: number;
  name: string;
  sql: string;
  /**
   * Data the version leaves to write (rows its SQL cannot fill): run over the engine's ports after every run
   * whose list holds this migration and in which nothing failed, applied now or before. Finds nothing to do
   * once done.
   */
  fill?(ports: Ports): Promise<void>;
}

/** One applied (or failed) migration; partial failure is reported as data, not only thrown. */
export interface MigrationResult {
  version: number;
  name: string;
  status: 'applied' | 'already-applied' | 'failed';
  error?: string;
}

export interface MigrationAdapter<Ports = unknown> {
  /**
   * Runs the whole migration under the engine's cross-process lock (instances starting together take turns);
   * errors other than a failed migration come out of here, worded by the engine.
   */
  locked<T>(run: () => Promise<T>): Promise<T>;
  /** Creates the table of applied versions when it is missing. */
  ensureHistory(): Promise<void>;
  appliedVersions(): Promise<Set<number>>;
  /**
   * Applies one migration and records it in one transaction; 'already-applied' when another process did it
   * meanwhile (decided again under the engine's write lock). Throws when the migration fails; nothing is kept.
   */
  apply(migration: Migration<Ports>): Promise<'applied' | 'already-applied'>;
  /** What the migrations' data steps read and write. */
  readonly ports: Ports;
}

/** A failed run, thrown where a caller cannot go on (opening the store); the results say which step failed. */
export class MigrationError extends Error {
  override name = 'MigrationError';
  constructor(readonly results: MigrationResult[]) {
    const failed = results.find((r) => r.status === 'failed');
    super(`migration ${failed?.version} (${failed?.name}) failed: ${failed?.error}`);
  }
}

/**
 * Applies what `migrations` has and the database lacks, in order; stops at the first failure. Then, when nothing
 * failed, runs the data steps of the list's migrations in order, outside the engine's lock: instances starting
 * together may fill at once, each write of theirs leaving rows already filled alone.
 */
export async function runMigrations<Ports>(adapter: MigrationAdapter<Ports>, migrations: readonly Migration<Ports>[]): Promise<MigrationResult[]> {
  const results = await applyMigrations(adapter, migrations);
  if (results.every((r) => r.status !== 'failed')) for (const m of migrations) await m.fill?.(adapter.ports);
  return results;
}

function applyMigrations<Ports>(adapter: MigrationAdapter<Ports>, migrations: readonly Migration<Ports>[]): Promise<MigrationResult[]> {
  return adapter.locked(async () => {
    await adapter.ensureHistory();
    const applied = await adapter.appliedVersions();
    const newer = newerThanBuild(applied, migrations);
    if (newer) return [newer];
    const results: MigrationResult[] = [];
    for (const m of migrations) {
      if (applied.has(m.version)) {
        results.push({ version: m.version, name: m.name, status: 'already-applied' });
        continue;
      }
      try {
        results.push({ version: m.version, name: m.name, status: await adapter.apply(m) });
      } catch (err) {
        results.push({ version: m.version, name: m.name, status: 'failed', error: (err as Error).message });
        break;
      }
    }
    return results;
  });
}

/**
 * A database migrated by a newer build (it holds versions this build does not know) must not be touched:
 * the failed result to report, or undefined when every applied version is known.
 */
function newerThanBuild(applied: ReadonlySet<number>, known: readonly Migration[]): MigrationResult | undefined {
  const versions = new Set(known.map((m) => m.version));
  const unknown = [...applied].filter((v) => !versions.has(v));
  if (unknown.length === 0) return undefined;
  const newest = Math.max(...unknown);
  return { version: newest, name: 'unknown', status: 'failed', error: `the database has migration ${newest}, newer than this build knows; upgrade plant-store` };
}
