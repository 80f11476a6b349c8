// Plant rules: what a valid new plant is beyond its schema, what an existing id means for a create, and
// the keyset pages of the list.
import { AppError } from '../errors.js';
import type { PlantQuery, PlantRecord, Store } from '../storage/store.js';
import { newPlantEvent } from '../webhooks/events.js';

/** A page as rows for the contract's serializer, or as the JSON text the store wrote (the engine's choice). */
export type PlantPage = ({ plants: PlantRecord[] } | { json: string }) & {
  /** The `after` of the next page, when more plants follow. */
  nextAfter?: bigint;
};

export interface PlantService {
  /** Stores the plant durably with its newPlant event; an identical replay succeeds (no event), a different plant under the same id is 409. */
  add(plant: PlantRecord): Promise<PlantRecord>;
  get(id: bigint): Promise<PlantRecord>;
  list(query: PlantQuery): Promise<PlantPage>;
  remove(id: bigint): Promise<void>;
}

export interface PlantServiceOptions {
  /** Called after a commit that wrote events, so delivery starts without waiting for a poll. */
  onEvents?: () => void;
  /**
   * Creates waiting for their commit above which a new create is refused with 503 and Retry-After rather
   * than queued (load shedding); 0 or absent means no bound.
   */
  maxPendingCreates?: number;
}

export function createPlantService(store: Store, options: PlantServiceOptions = {}): PlantService {
  const maxPending = options.maxPendingCreates ?? 0;
  let pending = 0;
  return {
    async add(plant) {
      // A lone surrogate cannot be stored as UTF-8 without changing it, and a changed name would make the
      // client's own retry look like a conflict.
      for (const field of ['name', 'tag'] as const) {
        const value = plant[field];
        if (value !== undefined && !value.isWellFormed()) {
          throw new AppError('BODY_INVALID', `body/${field} must be well-formed Unicode (it holds an unpaired surrogate).`);
        }
      }
      if (maxPending > 0 && pending >= maxPending) {
        throw new AppError('OVERLOADED', `${pending} creates are already waiting for their commit; nothing was stored. Retry after Retry-After seconds.`, {
          headers: { 'retry-after': '1' },
        });
      }
      pending++;
      let outcome;
      try {
        outcome = await store.createPlant(plant, newPlantEvent(plant));
      } finally {
        pending--;
      }
      if (outcome.kind === 'conflict') {
        throw new AppError('PLANT_CONFLICT', `A plant with id ${plant.id} already exists with a different name or tag.`);
      }
      if (outcome.kind === 'created') options.onEvents?.();
      return plant;
    },

    async get(id) {
      const plant = await store.getPlant(id);
      if (!plant) throw new AppError('PLANT_NOT_FOUND', `No plant with id ${id}.`);
      return plant;
    },

    async list(query) {
      if (store.listPlantsJson) {
        const page = await store.listPlantsJson(query);
        return page.more && page.lastId !== undefined ? { json: page.json, nextAfter: page.lastId } : { json: page.json };
      }
      // One row more than asked tells whether a next page exists, without a count.
      const rows = await store.listPlants({ ...query, limit: query.limit + 1 });
      if (rows.length <= query.limit) return { plants: rows };
      const plants = rows.slice(0, query.limit);
      return { plants, nextAfter: plants[plants.length - 1]!.id };
    },

    async remove(id) {
      if (!(await store.deletePlant(id))) throw new AppError('PLANT_NOT_FOUND', `No plant with id ${id}.`);
    },
  };
}
