// Plant rules: what a valid new plant is beyond its schema, what an existing id means for a create, and
// the keyset pages of the list.
import { AppError } from '../errors.js';
import type { PlantPage, PlantQuery, PlantRecord, PlantStore } from './plant.js';
import { newPlantEvent } from '../webhooks/events.js';

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

export function createPlantService(store: PlantStore, options: PlantServiceOptions = {}): PlantService {
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

    list(query) {
      return store.listPlantsJson(query);
    },

    async remove(id) {
      if (!(await store.deletePlant(id))) throw new AppError('PLANT_NOT_FOUND', `No plant with id ${id}.`);
    },
  };
}
