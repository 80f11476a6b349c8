// Plant rules: what a valid new plant is beyond its schema, and what an existing id means for a create.
import { AppError } from '../errors.js';
import type { PlantRecord, Store } from '../storage/store.js';

export interface PlantService {
  /** Stores the plant durably; an identical replay succeeds, a different plant under the same id is 409. */
  add(plant: PlantRecord): Promise<PlantRecord>;
}

export function createPlantService(store: Store): PlantService {
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
      const outcome = await store.createPlant(plant);
      if (outcome.kind === 'conflict') {
        throw new AppError('PLANT_CONFLICT', `A plant with id ${plant.id} already exists with a different name or tag.`);
      }
      return plant;
    },
  };
}
