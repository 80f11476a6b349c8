// The plant writes on SQLite, as the writer runs them: a batch of the group commit (storage/plant-writes.ts
// plantBatch) in one IMMEDIATE transaction, and the record of a restore, which raises the version counter the
// batches take their versions from. The writer on the calling thread runs a batch on the writes as they are;
// the write commands (write-commands.ts) run it on a batch's wire form.
import type Database from 'better-sqlite3';
import { foldName } from '../../plants/plant-search.js';
import type { PlantWrite } from '../../plants/plant.js';
import { plantBatch, type PlantStatements, type WriteOutcome } from '../plant-writes.js';
import { runSteps } from '../../kit/steps.js';
import { versionedPlantOf, type PlantRow } from '../rows.js';
import type { RestoreRecord } from '../restores.js';


/**
 * When a timed batch ran (milliseconds since the epoch, this thread's clock): BEGIN IMMEDIATE and the
 * statements from `began` to `written`, then the COMMIT (the WAL write and its fsync) until `committed`.
 */
export interface BatchTiming {
  began: number;
  written: number;
  committed: number;
}

export interface BatchWriter {
  /** Commits a batch, in one transaction: each write's outcome. */
  (items: readonly PlantWrite[]): WriteOutcome[];
  /** The same, timed (tracing on: the commit span's children). */
  timed(items: readonly PlantWrite[]): { outcomes: WriteOutcome[]; timing: BatchTiming };
}

const epochNow = () => performance.timeOrigin + performance.now();

/**
 * The plant batch (storage/plant-writes.ts plantBatch) on the writer's connection: one IMMEDIATE transaction, one
 * fsync. Versions come from the store-wide counter, one step per batch; events take their feed positions in the
 * transaction: one writer at a time holds the lock, so the order of positions is commit order (PostgreSQL, with
 * concurrent writers, places events in a pass after the commit). Prepares the statements once.
 */
export function createBatchWriter(db: Database.Database): BatchWriter {
  const takeVersions = db.prepare('UPDATE plant_version_counter SET last = last + ? RETURNING last').pluck().safeIntegers(true);
  const insertPlant = db.prepare('INSERT INTO plants (id, name, tag, created_at, version, name_folded) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING');
  const getPlant = db.prepare('SELECT id, name, tag, version FROM plants WHERE id = ?').safeIntegers(true);
  const updatePlant = db.prepare('UPDATE plants SET name = @name, tag = @tag, version = @version, name_folded = @folded WHERE id = @id');
  const deletePlant = db
    .prepare('DELETE FROM plants WHERE id = @id AND (@ifVersion IS NULL OR version = @ifVersion) RETURNING id, name, tag, version')
    .safeIntegers(true);
  const insertEvent = db.prepare('INSERT INTO webhook_events (id, type, payload, created_at, position, trace_context) VALUES (?, ?, ?, ?, ?, ?)');
  const lastPosition = db.prepare('SELECT last_position FROM event_log WHERE id = 1').pluck().safeIntegers(true);
  const setLastPosition = db.prepare('UPDATE event_log SET last_position = ? WHERE id = 1');

  let now = 0;
  /** The next version to give: the batch took its writes' count of them from the counter (unused ones are gaps). */
  let next = 0n;
  const find = (id: bigint) => {
    const row = getPlant.get(id) as PlantRow | undefined;
    return row && versionedPlantOf(row);
  };
  const statements: PlantStatements = {
    begin(writes) {
      now = Date.now();
      next = (takeVersions.get(writes) as bigint) - BigInt(writes) + 1n;
    },
    insert: (plants) => plants.map(({ id, name, tag }) => (insertPlant.run(id, name, tag ?? null, now, next, foldName(name)).changes === 1 ? next++ : null)),
    stored: (ids) => ids.flatMap((id) => find(id) ?? []),
    // One writer: nothing deletes between its statements.
    vanished: (id) => {
      throw new Error(`create of plant ${id} found its id taken and then no plant under it`);
    },
    current: find,
    update({ id, name, tag }) {
      updatePlant.run({ id, name, tag: tag ?? null, version: next, folded: foldName(name) });
      return next++;
    },
    remove(id, ifVersion) {
      const row = deletePlant.get({ id, ifVersion: ifVersion ?? null }) as PlantRow | undefined;
      return row && { plant: versionedPlantOf(row), version: next++ };
    },
    insertEvents(events) {
      let position = lastPosition.get() as bigint;
      for (const e of events) insertEvent.run(e.id, e.type, e.payload, now, ++position, e.trace);
      setLastPosition.run(position);
    },
  };
  /** Set while a timed batch runs: its transaction notes when its statements are done. */
  let timing: BatchTiming | undefined;
  const commit = db.transaction((items: readonly PlantWrite[]): WriteOutcome[] => {
    const outcomes = runSteps(plantBatch(items), statements);
    if (timing) timing.written = epochNow();
    return outcomes;
  });
  const write = (items: readonly PlantWrite[]) => commit.immediate(items);
  return Object.assign(write, {
    timed(items: readonly PlantWrite[]) {
      const began = epochNow();
      const t = (timing = { began, written: began, committed: began });
      try {
        const outcomes = commit.immediate(items);
        t.committed = epochNow();
        return { outcomes, timing: t };
      } finally {
        timing = undefined;
      }
    },
  });
}

/** A restore's record (storage/restores.ts), in one transaction: the version counter moved up to its versionsFrom (never down), and the record. */
export function restoreWrite(db: Database.Database) {
  const raiseCounter = db.prepare('UPDATE plant_version_counter SET last = max(last, ?)');
  const insertRestore = db.prepare('INSERT INTO store_restores (restored_at, newest_event_at, versions_from) VALUES (?, ?, ?)');
  const record = db.transaction((r: RestoreRecord) => {
    raiseCounter.run(r.versionsFrom);
    insertRestore.run(r.restoredAt.getTime(), r.newestEventAt?.getTime() ?? null, r.versionsFrom);
  });
  return (r: RestoreRecord) => record.immediate(r);
}
