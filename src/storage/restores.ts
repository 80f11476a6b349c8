// What a store restored from a backup must be told, so that nothing issued before the restore is issued again:
// the plant version counter (ETags, event versions) moves past every version that may have been issued since
// the backup was taken, and the restore is recorded, so that a feed cursor naming an event the restore
// discarded answers 410 (events/event-log.ts unknownCursor). `plant-store restore` does it for SQLite, and
// `plant-store migrate --after-restore` for any store (PostgreSQL after pg_restore); docs/backup.md says why.

/** One restore, as recorded in the restored store. */
export interface RestoreRecord {
  /** When the store was restored (the clock of the machine that ran the command). */
  restoredAt: Date;
  /** When the newest event the backup holds was created; null when it holds none. */
  newestEventAt: Date | null;
  /** The version counter's value after the restore: every version issued from then on is above it. */
  versionsFrom: bigint;
}

/** The restore half of a store. Every engine implements it; only a command run on a stopped store calls it. */
export interface RestoreStore {
  /** The last version the counter issued, and when the newest event held was created (null: none). */
  facts(): Promise<{ lastVersion: bigint; newestEventAt: Date | null }>;
  /** In one transaction: moves the counter up to `versionsFrom` (never down), and records the restore. */
  record(restore: RestoreRecord): Promise<void>;
}

/**
 * The lowest counter value after a restore at `now`: unix microseconds. The counter grows by one per version
 * issued, and the service issues far fewer than a million versions a second, so whatever was issued before the
 * restore is below this floor, however many writes the lost store took after the backup, even when that store
 * cannot be read. It stays below 2^53 (exact as a JavaScript number) until the year 2255.
 */
export function versionFloor(now: Date): bigint {
  return BigInt(now.getTime()) * 1000n;
}

/**
 * The restore to record: the counter moves to the highest of the backup's own counter, the counter of the store
 * the restore replaced (when it could be read), and the clock's floor; so a restore run on a machine whose clock
 * is behind still never goes back.
 */
export function restoreRecord(facts: { lastVersion: bigint; newestEventAt: Date | null }, now: Date, replacedLastVersion?: bigint): RestoreRecord {
  let versionsFrom = versionFloor(now);
  for (const v of [facts.lastVersion, replacedLastVersion ?? 0n]) if (v > versionsFrom) versionsFrom = v;
  return { restoredAt: now, newestEventAt: facts.newestEventAt, versionsFrom };
}

/** Records a restore in `store` at `now`; returns what it recorded. */
export async function markRestored(store: RestoreStore, now: Date, replacedLastVersion?: bigint): Promise<RestoreRecord> {
  const record = restoreRecord(await store.facts(), now, replacedLastVersion);
  await store.record(record);
  return record;
}
