// The plant write once, above the engines: creates, replaces, patches and deletes go through the engine's group
// commit (batcher.ts), and each batch is one transaction (one fsync) written here as steps (src/kit/steps.ts) over the
// small port of statements each engine implements (PlantStatements), as migrator.ts runs migrations over an
// engine's MigrationAdapter. Each write's outcome is decided once, in that transaction, by plants/' rules against
// the rows as it finds them, and each write that happens writes its event there too: nothing acknowledged can
// lose its event.
import { statementsOf, type AsyncStatements, type Steps } from '../kit/steps.js';
import type { OutboxEvent } from '../events/event.js';
import { writeEvent } from '../plants/plant-event.js';
import { decidePatch, decideRefusedDelete, decideTakenCreate, replaceAsPatch, type ChangeOutcome, type CreateOutcome, type PatchOutcome, type PlantPatch, type PlantRecord, type PlantWrite, type VersionedPlant } from '../plants/plant.js';
import type { Batcher } from './batcher.js';
import { StoreUnavailableError } from '../errors/store-errors.js';
import type { Observer } from '../observations/observations.js';
import { traceText } from '../tracing/spans.js';
import { tracing } from '../tracing/tracing-switch.js';

export abstract class GroupCommittedPlants {
  /** The engine's group commit of plant writes. */
  protected abstract readonly groupCommit: Batcher<PlantWrite, WriteOutcome>;
  /** Set once the store is closing: new work is refused (the group commit still commits what it accepted). */
  protected abstract closed: boolean;

  /**
   * Every engine closes in this order: new work is refused, every write already accepted is committed and
   * answered, then the engine stops what it runs in the background and closes its connections (release).
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.groupCommit.close();
    await this.release();
  }

  /** Stops what the engine runs in the background and closes its connections, once the writes are in. */
  protected abstract release(): Promise<void>;

  // The batch decides each write's outcome in its transaction (plantBatch), by the write's kind.
  createPlant(plant: PlantRecord): Promise<CreateOutcome> {
    return this.write({ op: 'create', plant }) as Promise<CreateOutcome>;
  }

  replacePlant(plant: PlantRecord, ifVersion?: bigint): Promise<ChangeOutcome> {
    return this.write({ op: 'replace', plant, ifVersion }) as Promise<ChangeOutcome>;
  }

  deletePlant(id: bigint, ifVersion?: bigint): Promise<ChangeOutcome> {
    return this.write({ op: 'delete', id, ifVersion }) as Promise<ChangeOutcome>;
  }

  patchPlant(id: bigint, patch: PlantPatch, ifVersions?: readonly bigint[]): Promise<PatchOutcome> {
    return this.write({ op: 'patch', id, patch, ifVersions }) as Promise<PatchOutcome>;
  }

  /** Reports each group commit to `observer` as a `commit` observation; returns its removal. */
  observe(observer: Observer): () => void {
    return this.groupCommit.observe(observer);
  }

  private write(item: PlantWrite): Promise<WriteOutcome> {
    if (this.closed) return Promise.reject(new StoreUnavailableError(new Error('store closed')));
    if (tracing.on) {
      // The request's trace goes with the write to whichever process commits it, and into its event.
      const trace = tracing.current();
      if (trace) item.trace = traceText(trace);
    }
    return this.groupCommit.submit(item);
  }
}

/** An event of the batch, with the trace context of the request that wrote (tracing/spans.ts traceText). */
export interface TracedEvent extends OutboxEvent {
  trace: string | null;
}

/** The statements a batch runs, in the engine's transaction. */
export interface PlantStatements {
  /** Starts a batch of at most `writes` writes (SQLite takes their versions from the store-wide counter at once). */
  begin(writes: number): void;
  /** Inserts each plant (their ids are distinct) whose id is free, with a new version: each one's version, or null where the id is taken. */
  insert(plants: readonly PlantRecord[]): (bigint | null)[];
  /** The stored plants among these ids. */
  stored(ids: readonly bigint[]): VersionedPlant[];
  /**
   * A create found its id taken and then no plant under it: another writer deleted it in between, which only a
   * database shared by several writers allows (PostgreSQL fails the transaction as retryable). Throws.
   */
  vanished(id: bigint): never;
  /** The plant as this transaction finds it, unchanged by others until the commit (PostgreSQL locks its row). */
  current(id: bigint): VersionedPlant | undefined;
  /** Stores a changed plant under a new version; that version. */
  update(plant: PlantRecord): bigint;
  /** Removes the plant if it has `ifVersion` (when given): what was removed, and the delete's new version. */
  remove(id: bigint, ifVersion: bigint | undefined): { plant: VersionedPlant; version: bigint } | undefined;
  /** Writes the events of the writes that happened, in the order they happened. */
  insertEvents(events: readonly TracedEvent[]): void;
}

export type AsyncPlantStatements = AsyncStatements<PlantStatements>;

/** What a write did: a create's outcome, or a replace's, patch's or delete's (a replace is never too long). */
export type WriteOutcome = CreateOutcome | PatchOutcome;

const statement = statementsOf<PlantStatements>();

/**
 * A batch, in one transaction. The creates go first, together: a free id is created (the first create of an id
 * in the batch), an id taken is a replay or a conflict with what is stored (decideTakenCreate). Then the
 * replaces, patches and deletes, in order: a patch (a replace too, as the patch that means it) is merged into the
 * plant as the transaction finds it (decidePatch), a delete removes only under the version it requires. Every
 * write of a batch is still waiting for its answer, so any order of them is one a client could have seen. Each
 * write takes a new version from the store-wide counter (a delete too: its event carries it, above every version
 * the plant had, so a receiver keeping the highest version per id orders a late update before it).
 */
export function* plantBatch(items: readonly PlantWrite[]): Steps<PlantStatements, WriteOutcome[]> {
  yield* statement('begin', items.length);
  const outcomes = new Array<WriteOutcome>(items.length);
  const events: TracedEvent[] = [];
  const happened = (write: PlantWrite, plant: PlantRecord, version: bigint) => events.push({ ...writeEvent(write.op, plant, version), trace: write.trace ?? null });

  const first = new Map<bigint, number>();
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!;
    if (item.op === 'create' && !first.has(item.plant.id)) first.set(item.plant.id, i);
  }
  if (first.size > 0) {
    const firsts = [...first.values()];
    const versions = yield* statement('insert', firsts.map((i) => (items[i] as CreateWrite).plant));
    const taken = firsts.filter((_, k) => versions[k] === null).map((i) => (items[i] as CreateWrite).plant.id);
    const stored = new Map<bigint, VersionedPlant>();
    if (taken.length > 0) for (const plant of yield* statement('stored', taken)) stored.set(plant.id, plant);
    for (let k = 0; k < firsts.length; k++) {
      const version = versions[k];
      if (version === null) continue;
      const item = items[firsts[k]!] as CreateWrite;
      stored.set(item.plant.id, { ...item.plant, version: version! });
      outcomes[firsts[k]!] = { kind: 'created', version: version! };
      happened(item, item.plant, version!);
    }
    for (let i = 0; i < items.length; i++) {
      const item = items[i]!;
      if (item.op !== 'create' || outcomes[i] !== undefined) continue;
      const found = stored.get(item.plant.id) ?? (yield* statement('vanished', item.plant.id));
      outcomes[i] = decideTakenCreate(item.plant, found);
    }
  }

  for (let i = 0; i < items.length; i++) {
    const asked = items[i]!;
    if (asked.op === 'create') continue;
    if (asked.op === 'delete') {
      const removed = yield* statement('remove', asked.id, asked.ifVersion);
      if (removed) {
        outcomes[i] = { kind: 'changed', plant: removed.plant };
        happened(asked, removed.plant, removed.version);
      } else {
        outcomes[i] = decideRefusedDelete((yield* statement('stored', [asked.id]))[0], asked.ifVersion);
      }
      continue;
    }
    const item = asked.op === 'replace' ? replaceAsPatch(asked) : asked;
    const decision = decidePatch(yield* statement('current', item.id), item.patch, item.ifVersions);
    if (decision.kind === 'write') {
      const version = yield* statement('update', decision.plant);
      outcomes[i] = { kind: 'changed', plant: { ...decision.plant, version } };
      happened(asked, decision.plant, version);
    } else if (decision.kind === 'too-long') {
      outcomes[i] = { kind: 'too-long', field: decision.field, rule: decision.rule };
    } else {
      outcomes[i] = decision;
    }
  }
  if (events.length > 0) yield* statement('insertEvents', events);
  return outcomes;
}

type CreateWrite = Extract<PlantWrite, { op: 'create' }>;

