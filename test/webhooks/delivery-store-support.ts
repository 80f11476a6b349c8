// What the webhook half of the store contract (delivery-store-*.test.ts) shares: a fresh store with its
// database URL (for a second connection to it), plants whose events make deliveries, and times from now.
import type { TestContext } from 'node:test';
import type { Store } from '../../src/storage/store.js';
import { freshDatabaseUrl } from '../helpers/app.js';
import { freshStore as migratedStore } from '../helpers/contract-store.js';
import { sequenced } from '../helpers/events.js';

/** A migrated store on a fresh database, closed when the test ends, and that database's URL. */
export async function freshStore(t: TestContext): Promise<{ store: Store; databaseUrl: string }> {
  const databaseUrl = await freshDatabaseUrl(t);
  return { store: await migratedStore(t, databaseUrl), databaseUrl };
}

/**
 * Creates plants from..from+count-1 at once (one group commit); each new one writes its newPlant event, and the
 * sequencing pass that follows makes its deliveries.
 */
export async function plants(store: Store, from: number, count: number): Promise<void> {
  await Promise.all(Array.from({ length: count }, (_, i) => store.createPlant({ id: BigInt(from + i), name: `p${from + i}` })));
  await sequenced(store);
}

export const at = (ms: number): Date => new Date(Date.now() + ms);
