// What the store contract suites share: a fresh migrated store per test, closed after it, and records compared
// without the versions the engines choose.
import type { TestContext } from 'node:test';
import { openStore } from '../../src/storage/open-store.js';
import type { Store } from '../../src/storage/store.js';
import { freshDatabaseUrl } from './test-store.js';

/** A migrated store on a fresh database (or on `databaseUrl`), closed when the test ends. */
export async function freshStore(t: TestContext, databaseUrl?: string): Promise<Store> {
  const { store } = await openStore(databaseUrl ?? (await freshDatabaseUrl(t)));
  t.after(() => store.close());
  return store;
}

/** Outcomes and records with every `version` taken out (the engines choose version numbers). */
export function unversioned<T>(value: T): T {
  if (Array.isArray(value)) return value.map((v) => unversioned(v)) as T;
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).filter(([k]) => k !== 'version').map(([k, v]) => [k, unversioned(v)])) as T;
}
