// What a store holds under an id, as a plant record without its version: for tests that check what was
// stored (or not), whatever versions the writes took.
import type { PlantRecord, PlantStore } from '../../src/plants/plant.js';

export async function storedPlant(store: PlantStore, id: bigint): Promise<PlantRecord | undefined> {
  const found = await store.getPlant(id);
  if (found === undefined) return undefined;
  const { version: _version, ...plant } = found;
  return plant;
}
