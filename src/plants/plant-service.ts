// Plant rules above the store: what a valid plant is beyond its schema, what an existing id means for a
// create, conditional changes (If-Match), merge patches, and the keyset pages of the list.
import { AppError } from '../errors/catalogue.js';
import { fieldTooLong, type ChangeOutcome, type PlantPage, type PlantPatch, type PlantQuery, type PlantRecord, type PlantStore, type VersionedPlant } from './plant.js';
import type { EventType } from '../events/event.js';
import { searchTextProblem } from './plant-search.js';
import type { CountLane } from './count-lane.js';

/**
 * What a conditional write requires of the plant's version: undefined (nothing), `*` (that it exists), or
 * one of these versions (from If-Match).
 */
export type Precondition = undefined | '*' | { versions: bigint[] };

export type { PlantPatch } from './plant.js';

/** A plant change committed, by the event that announces it: the plants' part of the process's observations. */
export interface PlantObservation {
  kind: 'plant-change';
  event: EventType;
}

export interface PlantService {
  /** Stores the plant durably with its newPlant event; an identical replay succeeds (no event), a different plant under the same id is 409. */
  add(plant: PlantRecord): Promise<VersionedPlant>;
  /** At once where the store reads at once (SQLite); a missing plant is thrown (or rejected) as 404. */
  get(id: bigint): VersionedPlant | Promise<VersionedPlant>;
  list(query: PlantQuery): Promise<PlantPage>;
  /**
   * How many plants match the query's filters (`Prefer: count=exact`), counted in the count lane in
   * `principal`'s turn (the token or JWT subject asking). Throws at once (400, or 429 or 503 when it may not
   * wait in the lane) rather than rejecting.
   */
  count(query: PlantQuery, principal: string): Promise<bigint>;
  /** Replaces name and tag; 404 when absent, 412 when the precondition fails. */
  replace(plant: PlantRecord, precondition: Precondition): Promise<VersionedPlant>;
  /** Applies a merge patch to the plant as it is when the write commits (or as the precondition names it). */
  patch(id: bigint, patch: PlantPatch, precondition: Precondition): Promise<VersionedPlant>;
  remove(id: bigint, precondition: Precondition): Promise<void>;
}

export interface PlantServiceOptions {
  /** Called after a commit that wrote events, so their sequencing pass starts without waiting for a poll. */
  eventsCommitted?: () => void;
  /** Told of every committed change, by the event that announces it (metrics). */
  observe?: (observation: PlantObservation) => void;
  /**
   * Writes waiting for their commit above which a new one is refused with 503 and Retry-After rather than
   * queued (load shedding); 0 or absent means no bound.
   */
  maxPendingWrites?: number;
  /** Updates and deletes without If-Match are refused with 428. */
  requireIfMatch?: boolean;
  /** Where counts run, one at a time (count-lane.ts); absent: each at once. */
  countLane?: CountLane;
}

export function createPlantService(store: PlantStore, options: PlantServiceOptions = {}): PlantService {
  const maxPending = options.maxPendingWrites ?? 0;
  let pending = 0;

  /** Bounds the writes waiting for a commit; the store call runs only when admitted. */
  async function admitted<T>(write: () => Promise<T>): Promise<T> {
    if (maxPending > 0 && pending >= maxPending) {
      throw new AppError('OVERLOADED', `${pending} writes are already waiting for their commit; nothing was stored. Retry after Retry-After seconds.`, {
        headers: { 'retry-after': '1' },
      });
    }
    pending++;
    try {
      return await write();
    } finally {
      pending--;
    }
  }

  /** A change committed, with its event: the sequencer is woken to place it and make its deliveries; metrics count it. */
  function changed(event: EventType): void {
    options.eventsCommitted?.();
    options.observe?.({ kind: 'plant-change', event });
  }

  function required(precondition: Precondition): void {
    if (options.requireIfMatch && precondition === undefined) throw new AppError('IF_MATCH_REQUIRED');
  }

  function notFound(id: bigint): AppError {
    return new AppError('PLANT_NOT_FOUND', `No plant with id ${id}.`);
  }

  function found(id: bigint, plant: VersionedPlant | undefined): VersionedPlant {
    if (!plant) throw notFound(id);
    return plant;
  }

  function mismatch(id: bigint): AppError {
    return new AppError('PLANT_CHANGED', `Plant ${id} does not have a version that If-Match names; nothing was changed. Read it again for its current ETag.`);
  }

  /** The version to require of the store, reading the plant first only when If-Match names several. */
  async function versionFor(id: bigint, precondition: Precondition): Promise<bigint | undefined> {
    if (precondition === undefined || precondition === '*') return undefined;
    if (precondition.versions.length === 1) return precondition.versions[0];
    const current = await store.getPlant(id);
    if (!current) throw notFound(id);
    if (!precondition.versions.includes(current.version)) throw mismatch(id);
    return current.version;
  }

  /** A changed or unchanged plant; the other outcomes as errors. */
  function settled(id: bigint, outcome: ChangeOutcome): VersionedPlant {
    switch (outcome.kind) {
      case 'changed':
      case 'unchanged':
        return outcome.plant;
      case 'not-found':
        throw notFound(id);
      case 'version-mismatch':
        throw mismatch(id);
    }
  }

  return {
    async add(plant) {
      wellFormed(plant);
      const outcome = await admitted(() => store.createPlant(plant));
      if (outcome.kind === 'conflict') {
        throw new AppError('PLANT_CONFLICT', `A plant with id ${plant.id} already exists with a different name or tag.`);
      }
      if (outcome.kind === 'created') changed('newPlant');
      return { ...plant, version: outcome.version };
    },

    get(id) {
      const plant = store.getPlant(id);
      return plant instanceof Promise ? plant.then((p) => found(id, p)) : found(id, plant);
    },

    list(query) {
      searchable(query);
      return store.listPlantsJson(query);
    },

    count(query, principal) {
      searchable(query);
      const lane = options.countLane;
      return lane ? lane.run(principal, () => store.countMatchingPlants(query)) : store.countMatchingPlants(query);
    },

    async replace(plant, precondition) {
      required(precondition);
      wellFormed(plant);
      const ifVersion = await versionFor(plant.id, precondition);
      const outcome = await admitted(() => store.replacePlant(plant, ifVersion));
      if (outcome.kind === 'changed') changed('plantUpdated');
      return settled(plant.id, outcome);
    },

    async patch(id, patch, precondition) {
      required(precondition);
      wellFormed(patch);
      // Merged in the write's transaction with the plant as committed (plant.ts decidePatch), If-Match too.
      const ifVersions = precondition === undefined || precondition === '*' ? undefined : precondition.versions;
      const outcome = await admitted(() => store.patchPlant(id, patch, ifVersions));
      if (outcome.kind === 'too-long') {
        // The patch itself was checked; a field it leaves alone may be one stored before the limit.
        throw new AppError('BODY_INVALID', `The patched plant's ${outcome.rule}; its stored ${outcome.field} is longer (it was stored before the limit): send a new ${outcome.field} in the patch.`);
      }
      if (outcome.kind === 'changed') changed('plantUpdated');
      return settled(id, outcome);
    },

    async remove(id, precondition) {
      required(precondition);
      const ifVersion = await versionFor(id, precondition);
      const outcome = await admitted(() => store.deletePlant(id, ifVersion));
      if (outcome.kind === 'changed') changed('plantDeleted');
      settled(id, outcome);
    },
  };
}

/** A `q` the engines cannot search for is the client's mistake: 400, saying why. */
function searchable(query: PlantQuery): void {
  const problem = query.q === undefined ? undefined : searchTextProblem(query.q);
  if (problem !== undefined) throw new AppError('VALIDATION_FAILED', problem);
}

/**
 * A lone surrogate cannot be stored as UTF-8 without changing it, and a changed name would make the client's
 * own retry look like a conflict.
 */
function wellFormed(fields: { name?: string; tag?: string | null }): void {
  // The schema bounds the lengths already; this holds the same rule for callers that bypass it.
  const tooLong = fieldTooLong(fields);
  if (tooLong !== undefined) throw new AppError('BODY_INVALID', `body/${tooLong.rule}.`);
  for (const field of ['name', 'tag'] as const) {
    const value = fields[field];
    if (typeof value === 'string' && !value.isWellFormed()) {
      throw new AppError('BODY_INVALID', `body/${field} must be well-formed Unicode (it holds an unpaired surrogate).`);
    }
  }
}
