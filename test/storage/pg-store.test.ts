// PostgreSQL-specific behaviour of the store: exact int8 ids in the column, migrations racing from many
// instances, creates racing from two instances, and outbox claims that never hand one delivery to two
// dispatchers (FOR UPDATE SKIP LOCKED) while an expired lease is claimed again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { startApp } from '../helpers/app.js';
import { freshPostgresUrl } from '../helpers/test-store.js';
import { openStore } from '../../src/storage/open-store.js';
import { MIGRATIONS } from '../../src/storage/postgres/migrations.js';
import type { Store } from '../../src/storage/store.js';
import { storedPlant } from '../helpers/stored-plant.js';
import { sequenced } from '../helpers/events.js';

async function sql<R extends pg.QueryResultRow>(url: string, text: string, values: unknown[] = []): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<R>(text, values)).rows;
  } finally {
    await client.end();
  }
}

async function open(t: Parameters<typeof freshPostgresUrl>[0], url: string): Promise<Store> {
  const { store } = await openStore(url);
  t.after(() => store.close());
  return store;
}

test('postgres: int64 extremes and ids above 2^53 round-trip exactly through HTTP and the BIGINT column', async (t) => {
  const s = await startApp(t, { databaseUrl: await freshPostgresUrl(t) });
  const ids = ['9223372036854775807', '-9223372036854775808', '9007199254740993', '-9007199254740993', '0'];
  for (const id of ids) {
    const res = await s.postPlant(`{"id":${id},"name":"n${id}"}`);
    assert.equal(res.status, 200, await res.clone().text());
    assert.equal(res.headers.get('location'), `/plants/${id}`);
  }
  for (const id of ids) {
    const res = await fetch(`${s.url}/plants/${id}`, { headers: { authorization: `Bearer ${s.token.read}` } });
    assert.equal(await res.text(), `{"id":${id},"name":"n${id}"}`);
  }
  const rows = await sql<{ id: string }>(s.databaseUrl, 'SELECT id::text AS id FROM plants ORDER BY plants.id');
  assert.deepEqual(rows.map((r) => r.id), [...ids].sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1)));
  const page = await fetch(`${s.url}/plants?after=9007199254740993&limit=5`, { headers: { authorization: `Bearer ${s.token.read}` } });
  // Its version: the store's first write.
  assert.equal(await page.text(), '[{"id":9223372036854775807,"name":"n9223372036854775807","version":2}]');
});

test('postgres: names holding U+0000 and U+FFFF are stored and read back unchanged, as records and in the list page JSON, and the tag filter matches exactly', async (t) => {
  const store = await open(t, await freshPostgresUrl(t));
  const odd = ['\u0000', 'a\u0000b', '\uffff0', '\uffff\u0000\uffff', 'plain'];
  for (const [i, name] of odd.entries()) assert.equal((await store.createPlant({ id: BigInt(i), name, tag: name })).kind, 'created');
  for (const [i, name] of odd.entries()) {
    assert.deepEqual(await storedPlant(store, BigInt(i)), { id: BigInt(i), name, tag: name });
    assert.deepEqual((await store.listPlants({ limit: 10, tag: name })).map((p) => p.id), [BigInt(i)]);
    assert.equal((await store.createPlant({ id: BigInt(i), name, tag: name })).kind, 'replayed');
  }
  // The list page the database writes as JSON text decodes them the same way.
  const page = await store.listPlantsJson({ limit: 10 });
  const withoutVersions = (json: string) => (JSON.parse(json) as { version: number }[]).map(({ version, ...plant }) => (assert.ok(version > 0), plant));
  assert.deepEqual(withoutVersions(page.json), odd.map((name, i) => ({ name, tag: name, id: i })));
  assert.deepEqual({ lastId: page.lastId, more: page.more }, { lastId: BigInt(odd.length - 1), more: false });
  const first = await store.listPlantsJson({ limit: 2, tag: odd[1]! });
  assert.deepEqual({ items: withoutVersions(first.json), more: first.more }, { items: [{ name: odd[1], tag: odd[1], id: 1 }], more: false });
});

test('postgres: eight instances migrating one new database at once apply each version exactly once', async (t) => {
  const url = await freshPostgresUrl(t);
  const results = await Promise.all(Array.from({ length: 8 }, () => openStore(url)));
  for (const { store } of results) t.after(() => store.close());
  const statuses = results.map(({ migrations }) => migrations.map((m) => `${m.version}:${m.status}`).join(','));
  const versions = MIGRATIONS.map((m) => m.version);
  assert.equal(statuses.filter((s) => s === versions.map((v) => `${v}:applied`).join(',')).length, 1, statuses.join(' | '));
  assert.equal(statuses.filter((s) => s === versions.map((v) => `${v}:already-applied`).join(',')).length, 7, statuses.join(' | '));
  const rows = await sql<{ version: number }>(url, 'SELECT version FROM schema_migrations ORDER BY version');
  assert.deepEqual(rows.map((r) => r.version), versions);
});

test('postgres: two instances creating the same ids at once agree: one created, replays identical, conflicts 409-worthy', async (t) => {
  const url = await freshPostgresUrl(t);
  const a = await open(t, url);
  const b = await open(t, url);
  const N = 300;
  // The same ids from both, in opposite orders (lock order must not deadlock), half with a different name on b.
  const fromA = Array.from({ length: N }, (_, i) => a.createPlant({ id: BigInt(i), name: `p${i}` }));
  const fromB = Array.from({ length: N }, (_, k) => {
    const i = N - 1 - k;
    return b.createPlant({ id: BigInt(i), name: i % 2 === 0 ? `p${i}` : `other${i}` });
  }).reverse();
  const [ra, rb] = await Promise.all([Promise.all(fromA), Promise.all(fromB)]);
  for (let i = 0; i < N; i++) {
    const kinds = [ra[i]!.kind, rb[i]!.kind].sort().join(',');
    if (i % 2 === 0) assert.equal(kinds, 'created,replayed', `id ${i}`);
    else assert.ok(kinds === 'conflict,created', `id ${i}: ${kinds}`);
  }
  assert.equal(await a.countPlants(), N);
});

test('postgres: concurrent claims from two stores never hand out the same delivery; an expired lease is claimed again', async (t) => {
  const url = await freshPostgresUrl(t);
  const a = await open(t, url);
  const b = await open(t, url);
  const now = new Date();
  for (const id of ['wh_a', 'wh_b', 'wh_c']) {
    await a.webhooks.insertSubscription(
      { id, url: `https://example.com/${id}`, description: null, events: ['newPlant'], format: 'plain', secret: 'whsec_dGVzdA==', createdAt: now, disabledAt: null, disabledReason: null },
      () => undefined,
    );
  }
  const N = 60; // a subscription holds at most 64 pending deliveries
  await Promise.all(Array.from({ length: N }, (_, i) => a.createPlant({ id: BigInt(i), name: `p${i}` })));
  await sequenced(a);
  const total = N * 3;
  assert.equal(await a.webhooks.countPendingDeliveries!(), total);

  const later = new Date(Date.now() + 1_000);
  const lease = new Date(later.getTime() + 60_000);
  const claimedBy = new Map<string, string>();
  const loop = async (name: string, store: Store) => {
    for (;;) {
      const got = await store.webhooks.claimDueDeliveries({ now: later, leaseUntil: lease, limit: 7, perSubscription: 3, skipSubscriptions: [] });
      if (got.length === 0) return;
      assert.ok(got.length <= 7);
      const perSub = new Map<string, number>();
      for (const d of got) {
        perSub.set(d.subscriptionId, (perSub.get(d.subscriptionId) ?? 0) + 1);
        assert.equal(claimedBy.get(d.deliveryId), undefined, `${d.deliveryId} claimed by ${claimedBy.get(d.deliveryId)} and ${name}`);
        claimedBy.set(d.deliveryId, name);
        assert.match(d.payload, /^\{"id":(\d+),"name":"p\1","version":\d+\}$/);
      }
      for (const n of perSub.values()) assert.ok(n <= 3, 'perSubscription exceeded');
    }
  };
  await Promise.all([loop('a', a), loop('b', b), loop('a2', a), loop('b2', b)]);
  assert.equal(claimedBy.size, total, 'every delivery claimed exactly once');
  const names = new Set(claimedBy.values());
  assert.ok(names.size >= 2, `only ${[...names].join()} claimed anything`);

  // Skipped subscriptions are not offered.
  const stillLeased = await b.webhooks.claimDueDeliveries({ now: later, leaseUntil: lease, limit: 100, perSubscription: 100, skipSubscriptions: [] });
  assert.equal(stillLeased.length, 0, 'a live lease was claimed again');
  // The leases expire (the instance holding them died): due again, at-least-once.
  const afterExpiry = new Date(lease.getTime() + 1);
  const again = await b.webhooks.claimDueDeliveries({ now: afterExpiry, leaseUntil: new Date(afterExpiry.getTime() + 60_000), limit: 1_000, perSubscription: 1_000, skipSubscriptions: ['wh_b'] });
  assert.equal(again.length, N * 2);
  assert.ok(again.every((d) => d.subscriptionId !== 'wh_b'));
  assert.ok(again.every((d) => claimedBy.has(d.deliveryId)));
});

test('postgres: a statement held up longer than DATABASE_STATEMENT_TIMEOUT_MS answers 503, and the next request works', async (t) => {
  const s = await startApp(t, { databaseUrl: await freshPostgresUrl(t), store: { statementTimeoutMs: 300 } });
  // Another session holds the plants table: every write waits on its lock until the timeout cancels it.
  const blocker = new pg.Client({ connectionString: s.databaseUrl });
  blocker.on('error', () => {}); // the database is dropped (its sessions ended) after the test
  await blocker.connect();
  t.after(() => blocker.end());
  await blocker.query('BEGIN');
  await blocker.query('LOCK TABLE plants IN ACCESS EXCLUSIVE MODE');
  const started = Date.now();
  const res = await s.postPlant({ id: 1, name: 'fern' });
  assert.equal(res.status, 503);
  assert.deepEqual(await res.json(), { error: 503, message: 'The store is unavailable; nothing was saved. Retry later.' });
  assert.ok(Date.now() - started < 5_000, `took ${Date.now() - started} ms`);
  await blocker.query('ROLLBACK');
  const retry = await s.postPlant({ id: 1, name: 'fern' });
  assert.equal(retry.status, 200);
});

test('postgres: GETs read together when the database cannot answer: each answers 503, and each GET after it its own plant', async (t) => {
  const s = await startApp(t, { databaseUrl: await freshPostgresUrl(t), store: { statementTimeoutMs: 300 } });
  const ids = ['1', '9007199254740993', '9007199254740992', '-9223372036854775808'];
  for (const id of ids) assert.equal((await s.postPlant(`{"id":${id},"name":"n${id}"}`)).status, 200);
  const get = (id: string) => fetch(`${s.url}/plants/${id}`, { headers: { authorization: `Bearer ${s.token.read}` } });
  // Another session holds the plants table: the reads wait on its lock until the statement timeout cancels them.
  const blocker = new pg.Client({ connectionString: s.databaseUrl });
  blocker.on('error', () => {});
  await blocker.connect();
  t.after(() => blocker.end());
  await blocker.query('BEGIN');
  await blocker.query('LOCK TABLE plants IN ACCESS EXCLUSIVE MODE');
  const asked = [...ids, ...ids, '2', '2'];
  const failed = await Promise.all(asked.map(get));
  for (const [i, res] of failed.entries()) {
    assert.equal(res.status, 503, `GET ${asked[i]}`);
    assert.deepEqual(await res.json(), { error: 503, message: 'The store is unavailable; nothing was saved. Retry later.' });
  }
  await blocker.query('ROLLBACK');
  const answered = await Promise.all(asked.map(get));
  for (const [i, res] of answered.entries()) {
    const id = asked[i]!;
    if (id === '2') assert.equal(res.status, 404);
    else assert.equal(await res.text(), `{"id":${id},"name":"n${id}"}`);
  }
});
test('PostgreSQL: a migration runs past the statement timeout of requests (an index on a large store takes minutes), which holds again afterwards', async (t) => {
  const url = await freshPostgresUrl(t);
  const migrations = [{ version: 1, name: 'slow', sql: 'SELECT pg_sleep(0.4); CREATE TABLE a (x INTEGER);' }];
  const { store, migrations: results } = await openStore(url, { migrations, statementTimeoutMs: 100 });
  t.after(() => store.close());
  assert.deepEqual(results.map((r) => `${r.version}:${r.status}`), ['1:applied']);
  // The pool's connections, the migration's among them, keep the requests' limit.
  const pool = (store as unknown as { pool: { query(sql: string): Promise<{ rows: { statement_timeout: string }[] }> } }).pool;
  for (let i = 0; i < 3; i++) assert.equal((await pool.query('SHOW statement_timeout')).rows[0]!.statement_timeout, '100ms');
});

