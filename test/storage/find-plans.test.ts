// The plans of every list statement (GET /plants: each order, with and without tag, q and a cursor, and the
// count of Prefer: count=exact) read indexes, on both engines: no full scan of plants, and no sort of plants
// unless q is given in a name order (then the trigram index finds the matches, which are sorted, or, on SQLite
// when many match, the order's index is walked: both plans are checked); a name order without q reads the
// folded-name index (schema version 12). EXPLAIN, so a later change cannot turn a query into a scan unnoticed.
// And the upgrades of a store holding plants: to schema version 11, their folded names filled and indexed; to
// version 12, the names beyond ASCII folded again (accents removed) and the name order read as a person reads.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import pg from 'pg';
import { freshDatabaseUrl, TEST_STORE } from '../helpers/test-store.js';
import { openStore } from '../../src/storage/open-store.js';
import { PLANT_ORDERS, type PlantQuery } from '../../src/plants/plant.js';
import { sqliteListStatement } from '../../src/storage/sqlite/sqlite-plant-queries.js';
import { pgListStatement } from '../../src/storage/postgres/pg-plant-queries.js';
import { MIGRATIONS as SQLITE_MIGRATIONS } from '../../src/storage/sqlite/migrations.js';
import { MIGRATIONS as PG_MIGRATIONS } from '../../src/storage/postgres/migrations.js';
import { toDbText } from '../../src/storage/postgres/text.js';

/** Every shape of query the list endpoint can send (limit aside). */
function queries(): { query: PlantQuery; output: 'page' | 'count' }[] {
  const all: { query: PlantQuery; output: 'page' | 'count' }[] = [];
  for (const filters of [{}, { tag: 'x' }, { q: 'fer' }, { tag: 'x', q: 'fer' }] as Partial<PlantQuery>[]) {
    all.push({ query: { limit: 20, ...filters }, output: 'count' });
    for (const order of PLANT_ORDERS) {
      all.push({ query: { limit: 20, order, ...filters }, output: 'page' });
      all.push({ query: { limit: 20, order, after: 5n, afterName: 'm', ...filters }, output: 'page' });
    }
  }
  return all;
}

test('every list statement reads indexes: no full scan, no sort without q', async (t) => {
  const url = await freshDatabaseUrl(t);
  const { store } = await openStore(url);
  t.after(() => store.close());
  // As a store holds them: many plants, few of them matching the q.
  await store.importPlants(Array.from({ length: TEST_STORE === 'postgres' ? 20000 : 2000 }, (_, i) => ({ id: BigInt(i), name: i % 1000 === 0 ? `fern ${i}` : `plant ${i}`, ...(i % 2 === 0 && { tag: 'x' }) })));

  if (TEST_STORE === 'sqlite') {
    const db = new Database(url.slice('sqlite:'.length), { readonly: true });
    t.after(() => db.close());
    for (const { query, output } of queries()) {
      const { sql, values } = sqliteListStatement(query, output);
      const plan = (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(values) as { detail: string }[]).map((r) => r.detail);
      const what = `${JSON.stringify(query, (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v))} ${output}: ${plan.join(' | ')}`;
      // A bare SCAN of plants walks the rowid (the id) in order: with no filter and an id order it stops at the
      // limit; anywhere else it would read every plant.
      const walksIds = query.tag === undefined && query.q === undefined && (query.order === 'id' || query.order === '-id');
      if (!walksIds) assert.ok(!plan.some((d) => /^SCAN plants$/.test(d)), `no full scan: ${what}`);
      const byName = query.order === 'name' || query.order === '-name';
      // A q in an id order reads the trigram index in id order, a page of matches and no more: no sort either.
      if (query.q === undefined || !byName || output === 'count') assert.ok(!plan.some((d) => /TEMP B-TREE/.test(d)), `no sort: ${what}`);
      if (query.q !== undefined) assert.ok(plan.some((d) => /plant_names VIRTUAL TABLE/.test(d)), `the trigram index: ${what}`);
      if (query.q === undefined && byName && output === 'page') assert.ok(plan.some((d) => /USING (COVERING )?INDEX plants_(tag_)?folded_name_id/.test(d)), `the folded-name index: ${what}`);
      if (query.q !== undefined && byName && output === 'page') {
        // Many matches: the order's index walked, each name tested, no sort.
        const walk = sqliteListStatement(query, output, 'walk');
        const walked = (db.prepare(`EXPLAIN QUERY PLAN ${walk.sql}`).all(walk.values) as { detail: string }[]).map((r) => r.detail);
        assert.ok(walked.some((d) => /USING (COVERING )?INDEX plants_(tag_)?folded_name_id/.test(d)), `the folded-name index walked: ${walked.join(' | ')}`);
        assert.ok(!walked.some((d) => /TEMP B-TREE|^SCAN plants$/.test(d)), `no sort, no scan: ${walked.join(' | ')}`);
      }
    }
    return;
  }

  const client = new pg.Client({ connectionString: url });
  await client.connect();
  // Ended here, not in an after hook: those run once the database is dropped, which ends the connection first.
  try {
    await explainAll(client);
  } finally {
    await client.end();
  }
});

async function explainAll(client: pg.Client): Promise<void> {
  // What autovacuum does on a real store: statistics, so that the planner knows a q is selective.
  await client.query('ANALYZE plants');
  const planOf = async (sql: string, values: unknown[]) => {
    const { rows } = await client.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON) ${sql}`, values);
    const nodes: string[] = [];
    const visit = (node: { 'Node Type': string; 'Index Name'?: string; Plans?: unknown[] }) => {
      nodes.push(node['Index Name'] ? `${node['Node Type']} ${node['Index Name']}` : node['Node Type']);
      for (const child of node.Plans ?? []) visit(child as typeof node);
    };
    visit((rows[0]!['QUERY PLAN'] as { Plan: Parameters<typeof visit>[0] }[])[0]!.Plan);
    return nodes;
  };
  for (const { query, output } of queries()) {
    // The table is small: the planner rightly prefers reading it all, and sorting. With these off, a Seq Scan
    // (or, without q, a Sort) left in a plan means no index can answer the statement (in its order).
    await client.query('SET enable_seqscan = off');
    const ordered = query.q === undefined ? 'off' : 'on';
    await client.query(`SET enable_sort = ${ordered}`);
    await client.query(`SET enable_bitmapscan = ${ordered}`);
    const { sql, values } = pgListStatement(query, output);
    const nodes = await planOf(sql, values);
    const what = `${JSON.stringify(query, (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v))} ${output}: ${nodes.join(' > ')}`;
    assert.ok(!nodes.includes('Seq Scan'), `no full scan: ${what}`);
    if (query.q === undefined) assert.ok(!nodes.includes('Sort'), `no sort: ${what}`);
    const byName = query.order === 'name' || query.order === '-name';
    // Only the plants that share the folded name's indexed key are sorted (Incremental Sort), not the table.
    if (query.q === undefined && byName && output === 'page') assert.ok(nodes.some((n) => /plants_(tag_)?folded_name_id$/.test(n)), `the folded-name index: ${what}`);
    if (query.q !== undefined && query.after === undefined) {
      // With q the planner may walk an order's index and test each name (a common text fills a page soon) or read
      // the trigram index (a rare one): both plans must exist. Without the ordered walk, it is the trigram index.
      // (With this test's cursors, the rows on the cursor's side may be the fewest: then the key's index is right.)
      await client.query('SET enable_indexscan = off');
      const trigram = await planOf(sql, values);
      await client.query('SET enable_indexscan = on');
      assert.ok(trigram.some((n) => n.includes('plants_name_trgm')), `the trigram index: ${what}; without index scans: ${trigram.join(' > ')}`);
    }
  }
}

test('a store of version 10 with plants, opened by this build: their folded names are filled and indexed; q, writes and deletes work', async (t) => {
  const url = await freshDatabaseUrl(t);
  const before = (TEST_STORE === 'sqlite' ? SQLITE_MIGRATIONS : PG_MIGRATIONS).filter((m) => m.version < 11);
  const old = (await openStore(url, { migrations: before })).store;
  await old.close();
  // Rows as version 10 wrote them (its write path had no folded name), made with SQL: this build's writes need version 11.
  const rows = "(1, 'Émile''s Ivy', 'x', 0), (2, 'Boston fern', NULL, 0), (3, 'Straße', 'x', 0)";
  // Names from before their 256-character limit, longer than a btree entry holds even compressed (12 KB of
  // varied text), two of them equal in their first 256 characters: the indexes and the name order still hold them.
  const long = (last: string) => `${'Straße '.repeat(40)}${Array.from({ length: 4000 }, (_, i) => String.fromCodePoint(0x4e00 + ((i * 7919) % 20000))).join('')}${last}`;
  const longs = [{ id: 5, name: long('b'), tag: 'x' }, { id: 4, name: long('a'), tag: 'x' }];
  // ASCII names are folded by the database (lower()), the others by the service: a control character stays.
  const extra = [...longs, { id: 6, name: 'Tab\tFERN', tag: 'y' }];
  if (TEST_STORE === 'sqlite') {
    const db = new Database(url.slice('sqlite:'.length));
    db.exec(`INSERT INTO plants (id, name, tag, created_at) VALUES ${rows}`);
    for (const p of extra) db.prepare("INSERT INTO plants (id, name, tag, created_at) VALUES (?, ?, ?, 0)").run(p.id, p.name, p.tag);
    db.close();
  } else {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(`INSERT INTO plants (id, name, tag, created_at) SELECT id, name, tag, to_timestamp(0) FROM (VALUES ${rows}) AS v(id, name, tag, c)`);
    for (const p of extra) await client.query('INSERT INTO plants (id, name, tag, created_at) VALUES ($1, $2, $3, to_timestamp(0))', [p.id, p.name, p.tag]);
    await client.end();
  }
  const { store } = await openStore(url);
  t.after(() => store.close());
  const ids = async (query: Partial<PlantQuery>) => (await store.listPlants({ limit: 10, ...query })).map((p) => Number(p.id));
  assert.deepEqual(await ids({ q: 'ÉMILE' }), [1]);
  assert.deepEqual(await ids({ q: 'strasse', tag: 'x' }), [3, 4, 5]);
  assert.deepEqual(await ids({ order: '-name' }), [6, 5, 4, 3, 1, 2], 'T after S after É (as E) after B; the long names by their last character, not their id');
  assert.deepEqual(await ids({ order: 'name', tag: 'x' }), [1, 3, 4, 5]);
  // A cursor on a long name (its folded name longer than the indexed key): the page after it, both ways.
  assert.deepEqual(await ids({ order: 'name', after: 4n, afterName: longs[1]!.name }), [5, 6]);
  assert.deepEqual(await ids({ order: '-name', after: 5n, afterName: longs[0]!.name }), [4, 3, 1, 2]);
  // The index follows the rows written before it: a rename and a delete of them.
  assert.equal((await store.patchPlant(2n, { name: 'Sword fern' })).kind, 'changed');
  assert.equal((await store.deletePlant(1n)).kind, 'changed');
  assert.deepEqual(await ids({ q: 'FERN' }), [2, 6]);
  assert.deepEqual(await ids({ q: 'b\tf' }), [6]);
  assert.deepEqual(await ids({ q: 'émile' }), []);
  assert.equal(await store.countMatchingPlants({ limit: 1, q: 'SWORD' }), 1n);
});

test('a store of version 11, opened by this build: names beyond ASCII are folded again, q ignores accents, the name order reads as a person reads', async (t) => {
  const url = await freshDatabaseUrl(t);
  const v11 = (TEST_STORE === 'sqlite' ? SQLITE_MIGRATIONS : PG_MIGRATIONS).filter((m) => m.version <= 11);
  await (await openStore(url, { migrations: v11 })).store.close();
  // Rows as version 11 wrote them: folded upper then lower case, accents and ligatures kept.
  const rows = [
    { id: 1, name: 'Épipremnum aureum', tag: 'x' },
    { id: 2, name: 'Straße Palm', tag: null },
    { id: 3, name: 'ficus benjamina', tag: 'x' },
    { id: 4, name: 'FICUS elastica', tag: null },
    { id: 5, name: 'Ficus lyrata', tag: 'x' },
    { id: 6, name: 'ﬁcus microcarpa', tag: null },
    // Folded whole past its U+0000 (SQLite's length() stops there; PostgreSQL stores it escaped).
    { id: 7, name: 'Nul\u0000Épi', tag: null },
  ].map((r) => [r.id, TEST_STORE === 'postgres' ? toDbText(r.name) : r.name, r.tag, TEST_STORE === 'postgres' ? toDbText(r.name.toUpperCase().toLowerCase()) : r.name.toUpperCase().toLowerCase()] as const);
  if (TEST_STORE === 'sqlite') {
    const db = new Database(url.slice('sqlite:'.length));
    const insert = db.prepare('INSERT INTO plants (id, name, tag, created_at, name_folded) VALUES (?, ?, ?, 0, ?)');
    for (const r of rows) insert.run(...r);
    db.close();
  } else {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    for (const r of rows) await client.query('INSERT INTO plants (id, name, tag, created_at, name_folded) VALUES ($1, $2, $3, to_timestamp(0), $4)', [...r]);
    await client.end();
  }
  const { store } = await openStore(url);
  t.after(() => store.close());
  const ids = async (query: Partial<PlantQuery>) => (await store.listPlants({ limit: 10, ...query })).map((p) => Number(p.id));
  assert.deepEqual(await ids({ q: 'epi' }), [1, 7]);
  assert.deepEqual(await ids({ q: 'ÉPI' }), [1, 7]);
  assert.deepEqual(await ids({ q: 'nul' }), [7]);
  assert.deepEqual(await ids({ q: 'strasse' }), [2]);
  assert.deepEqual(await ids({ q: 'FICUS', order: 'name' }), [3, 4, 5, 6], 'the ligature ﬁ is fi');
  assert.deepEqual(await ids({ order: 'name' }), [1, 3, 4, 5, 6, 7, 2]);
  assert.deepEqual(await ids({ order: '-name', tag: 'x' }), [5, 3, 1]);
  assert.deepEqual(await ids({ order: 'name', after: 4n, afterName: 'FICUS elastica' }), [5, 6, 7, 2]);
  assert.equal(await store.countMatchingPlants({ limit: 1, q: 'icu' }), 4n);
});
