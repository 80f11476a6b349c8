// The time to upgrade a store of N plants to schema version 10 (find plants: the folded names, the name-order
// indexes, the trigram index), on the engine of DATABASE_URL: the store is made at version 9 with N plants,
// then opened by this build, which migrates and fills the folded names before it serves.
// Usage (after npm run build): N=1000000 DATABASE_URL=sqlite:/tmp/x.db node bench/find-index-build.mjs
import { openStore } from '../dist/src/storage/open-store.js';
import { MIGRATIONS as SQLITE } from '../dist/src/storage/sqlite/migrations.js';
import { MIGRATIONS as PG } from '../dist/src/storage/postgres/migrations.js';

const url = process.env.DATABASE_URL;
const n = Number(process.env.N ?? 1_000_000);
const before = (url.startsWith('sqlite:') ? SQLITE : PG).filter((m) => m.version < 10);
const WORDS = ['fern', 'ivy', 'palm', 'moss', 'cactus', 'orchid', 'lily', 'rose', 'Émile', 'Straße', 'monstera', 'ficus'];

const old = (await openStore(url, { migrations: before })).store;
const t0 = performance.now();
for (let from = 0; from < n; from += 10_000) {
  const batch = Array.from({ length: Math.min(10_000, n - from) }, (_, k) => {
    const i = from + k;
    return { id: BigInt(i) * 7919n - 4_000_000_000n, name: `${WORDS[i % WORDS.length]} ${WORDS[(i * 7) % WORDS.length]} ${i.toString(36)}`, ...(i % 3 === 0 && { tag: 'x' }) };
  });
  await old.importPlants(batch);
}
await old.close();
console.log(`seeded ${n} plants at version 9 in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
const t1 = performance.now();
const { store } = await openStore(url);
console.log(`migrated to version 10 and filled the folded names of ${n} plants in ${((performance.now() - t1) / 1000).toFixed(1)} s`);
await store.close();
