// The time to upgrade a store of N plants to schema version 11 (find plants: the folded names, the name-order
// indexes, the trigram index), on the engine of DATABASE_URL: the store is made at version 10 with N plants,
// then opened by this build, which migrates and fills the folded names before it serves.
// Usage (after npm run build; Node 24, the project's): N=1000000 DATABASE_URL=sqlite:/tmp/x.db node bench/find-index-build.mjs
import { createRequire } from 'node:module';
import pg from 'pg';
import { openStore } from '../dist/src/storage/open-store.js';
import { MIGRATIONS as SQLITE } from '../dist/src/storage/sqlite/migrations.js';
import { MIGRATIONS as PG } from '../dist/src/storage/postgres/migrations.js';

const url = process.env.DATABASE_URL;
const n = Number(process.env.N ?? 1_000_000);
const before = (url.startsWith('sqlite:') ? SQLITE : PG).filter((m) => m.version < 11);
const WORDS = ['fern', 'ivy', 'palm', 'moss', 'cactus', 'orchid', 'lily', 'rose', 'Émile', 'Straße', 'monstera', 'ficus'];
const words = `(VALUES ${WORDS.map((w, i) => `(${i}, '${w}')`).join(', ')})`;

// Made at version 10 by the store, filled by SQL: this build's write path needs version 11.
await (await openStore(url, { migrations: before })).store.close();
const t0 = performance.now();
if (url.startsWith('sqlite:')) {
  const Database = createRequire(import.meta.url)('better-sqlite3');
  const db = new Database(url.slice('sqlite:'.length));
  db.exec(`WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < ${n - 1}), w(k, word) AS ${words}
    INSERT INTO plants (id, name, tag, created_at)
    SELECT i * 7919 - 4000000000, (SELECT word FROM w WHERE k = i % 12) || ' ' || (SELECT word FROM w WHERE k = (i * 7) % 12) || ' ' || i,
           CASE WHEN i % 3 = 0 THEN 'x' END, 0 FROM c`);
  db.close();
} else {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(`WITH w(k, word) AS ${words}
    INSERT INTO plants (id, name, tag, created_at)
    SELECT i * 7919 - 4000000000, (SELECT word FROM w WHERE k = i % 12) || ' ' || (SELECT word FROM w WHERE k = (i * 7) % 12) || ' ' || i,
           CASE WHEN i % 3 = 0 THEN 'x' END, now() FROM generate_series(0::int8, ${n - 1}) AS i`);
  await client.end();
}
console.log(`seeded ${n} plants at version 10 in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
const t1 = performance.now();
const { store } = await openStore(url);
console.log(`migrated to version 11 and filled the folded names of ${n} plants in ${((performance.now() - t1) / 1000).toFixed(1)} s`);
await store.close();
