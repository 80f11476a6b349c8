// One transaction of plant writes (one fsync), in order: a create inserts its plant unless the id is taken, a
// delete writes only under the conditions of PlantWrite, a patch (and a replace, as the patch that means it)
// is merged into the row as this transaction finds it (plants/ decides: decidePatch), and each write that
// happens writes its event (webhooks/ says which: writeEvent). Each write takes a new version from the store-wide counter (a delete too: its event carries it). For each write it
// reports what it did and found (plants/ judges that: decideCreate, decideChange). Runs on the store's one
// writer, as its `plants` command (write-commands.ts).
import type Database from 'better-sqlite3';
import { foldName } from '../../plants/plant-search.js';
import { decidePatch, replaceAsPatch, type PlantRecord, type PlantWrite, type WriteResult } from '../../plants/plant.js';
import { writeEvent } from '../../webhooks/outbox-events.js';
import { versionedPlantOf, type PlantRow } from '../rows.js';

/**
 * Per write, two values: whether it wrote, then the row it concerns as its new version alone (a create or
 * replace that wrote: the row is the one asked for), as the stored row (with its version: what a write that
 * did not happen found, what a patch stored, or what a delete removed), or null when the id holds no plant.
 */
export type BatchResults = (boolean | bigint | PlantRow | null)[];

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
  (items: readonly PlantWrite[]): BatchResults;
  /** The same, timed (tracing on: the commit span's children). */
  timed(items: readonly PlantWrite[]): { results: BatchResults; timing: BatchTiming };
}

const epochNow = () => performance.timeOrigin + performance.now();

/** Prepares the statements once; the returned function commits a batch, in order. */
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
  /** Set while a timed batch runs: its transaction notes when its statements are done. */
  let timing: BatchTiming | undefined;
  const commit = db.transaction((items: readonly PlantWrite[]): BatchResults => {
    const now = Date.now();
    // The event commits with the write or not at all: nothing acknowledged can lose its event. It takes its
    // feed position here too: one writer at a time holds the lock, so the order of positions is commit order
    // (PostgreSQL, with concurrent writers, places events in a pass after the commit). Its deliveries come
    // after, off this path (events/sequencer.ts).
    let position: bigint | undefined;
    const announce = (write: PlantWrite, plant: PlantRecord, version: bigint) => {
      const e = writeEvent(write.op, plant, version);
      position = (position ?? (lastPosition.get() as bigint)) + 1n;
      insertEvent.run(e.id, e.type, e.payload, now, position, write.trace ?? null);
    };
    // One step of the counter for the batch: write i gets version base + i + 1 (unused ones are gaps).
    const base = (takeVersions.get(items.length) as bigint) - BigInt(items.length);
    const results: BatchResults = new Array(items.length * 2);
    for (let i = 0; i < items.length; i++) {
      const asked = items[i]!;
      const item = asked.op === 'replace' ? replaceAsPatch(asked) : asked;
      const version = base + BigInt(i + 1);
      let wrote: bigint | PlantRow | undefined;
      if (item.op === 'create') {
        const { id, name, tag } = item.plant;
        if (insertPlant.run(id, name, tag ?? null, now, version, foldName(name)).changes === 1) {
          wrote = version;
          announce(asked, item.plant, version);
        }
      } else if (item.op === 'patch') {
        const found = getPlant.get(item.id) as PlantRow | undefined;
        const decision = decidePatch(found && versionedPlantOf(found), item.patch, item.ifVersions);
        if (decision.kind === 'write') {
          const { id, name, tag } = decision.plant;
          updatePlant.run({ id, name, tag: tag ?? null, version, folded: foldName(name) });
          // The merged plant, with its new version: what the answer shows.
          wrote = { id, name, tag: tag ?? null, version };
          announce(asked, decision.plant, version);
        }
      } else {
        wrote = deletePlant.get({ id: item.id, ifVersion: item.ifVersion ?? null }) as PlantRow | undefined;
        // A delete is a change like any other: its event takes the write's new version, above every version
        // the plant had, so a receiver keeping the highest version per id orders a late update before it.
        if (wrote) announce(asked, { id: item.id, name: wrote.name }, version);
      }
      results[2 * i] = wrote !== undefined;
      // A write that did not happen reports what it found; a later write of an id written earlier in the same
      // batch finds that, like any stored row.
      results[2 * i + 1] = wrote ?? ((getPlant.get(item.op === 'create' ? item.plant.id : item.id) as PlantRow | undefined) ?? null);
    }
    if (position !== undefined) setLastPosition.run(position);
    if (timing) timing.written = epochNow();
    return results;
  });
  const write = (items: readonly PlantWrite[]) => commit.immediate(items);
  return Object.assign(write, {
    timed(items: readonly PlantWrite[]) {
      const began = epochNow();
      const t = (timing = { began, written: began, committed: began });
      try {
        const results = commit.immediate(items);
        t.committed = epochNow();
        return { results, timing: t };
      } finally {
        timing = undefined;
      }
    },
  });
}

/** The batch's results as one WriteResult per write (the rows as records). */
export function writeResultsOf(items: readonly PlantWrite[], results: BatchResults): WriteResult[] {
  return items.map((item, i) => {
    const wrote = results[2 * i] as boolean;
    const found = results[2 * i + 1] as bigint | PlantRow | null;
    if (typeof found === 'bigint') return { wrote, row: { ...(item as { plant: PlantRecord }).plant, version: found } };
    return { wrote, row: found === null ? undefined : versionedPlantOf(found) };
  });
}
