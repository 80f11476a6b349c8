// GET /events?types=…&plant=…: a page and a stream narrowed alike, the cursor still the event id, so a filtered
// reader resumes exactly and Link keeps the filter; a bad filter is 400; one plant's events are read through
// their index (webhook_events_plant) on both engines, not by reading the whole feed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import pg from 'pg';
import { startApp, type TestApp } from '../helpers/app.js';
import { eventually } from '../helpers/sleep.js';
import { freshDatabaseUrl, TEST_STORE } from '../helpers/test-store.js';
import { openStream } from '../helpers/events.js';
import { openStore } from '../../src/storage/open-store.js';
import { MIGRATIONS as SQLITE_MIGRATIONS } from '../../src/storage/sqlite/migrations.js';
import { MIGRATIONS as PG_MIGRATIONS } from '../../src/storage/postgres/migrations.js';
import { readAfterStatement } from '../../src/storage/sqlite/sqlite-events.js';
import { readAfterSql } from '../../src/storage/postgres/pg-events.js';

interface Event {
  id: string;
  type: string;
  data: { id: number | string };
}

async function page(s: TestApp, query: string): Promise<{ status: number; events: Event[]; link: string | null; body: string }> {
  const res = await fetch(`${s.url}/events${query}`, { headers: { authorization: `Bearer ${s.token.read}` } });
  const body = await res.text();
  return { status: res.status, events: res.status === 200 ? (JSON.parse(body) as Event[]) : [], link: res.headers.get('link'), body };
}

function send(s: TestApp, method: string, path: string, body?: string): Promise<Response> {
  return fetch(`${s.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${s.token.write}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
    ...(body !== undefined && { body }),
  });
}

const BIG = 2n ** 53n + 3n;

/** Creates, updates and deletes of three plants, one of them with an id above 2^53. */
async function history(s: TestApp): Promise<void> {
  for (const id of [1n, BIG, 2n]) assert.equal((await send(s, 'POST', '/plants', `{"id":${id},"name":"p${id}"}`)).status, 200);
  for (const id of [BIG, 1n]) assert.equal((await send(s, 'PUT', `/plants/${id}`, '{"name":"again"}')).status, 200);
  assert.equal((await send(s, 'DELETE', `/plants/${BIG}`)).status, 204);
  await eventually(async () => (await page(s, '')).events.length === 6, 'six events placed');
}

const plantOf = (data: string | Event['data']) => String(typeof data === 'string' ? /"id":(\d+)/.exec(data)![1] : data.id);

test('types and plant narrow the page and the stream alike; Link keeps the filter; a filtered stream resumes exactly; a bad filter is 400', async (t) => {
  const s = await startApp(t);
  await history(s);
  const all = (await page(s, '')).events;

  const created = await page(s, '?types=newPlant,plantDeleted');
  assert.deepEqual(created.events.map((e) => e.type), ['newPlant', 'newPlant', 'newPlant', 'plantDeleted']);
  // Ids exact in the page's text: the plant filter takes an int64 and the body says it digit for digit.
  const big = await page(s, `?plant=${BIG}`);
  assert.deepEqual(big.events.map((e) => e.type), ['newPlant', 'plantUpdated', 'plantDeleted']);
  assert.equal(big.body.match(new RegExp(`"id":${BIG}[,}]`, 'g'))?.length, 3);
  const both = await page(s, `?types=plantUpdated&plant=${BIG}`);
  assert.deepEqual(both.events.map((e) => e.id), [all[3]!.id]);

  // One at a time: Link carries the filter, and the pages walk exactly the filtered events.
  const walked: string[] = [];
  let query: string | undefined = `?types=plantUpdated,plantDeleted&limit=1`;
  while (query !== undefined) {
    const p = await page(s, query);
    walked.push(...p.events.map((e) => e.id));
    query = p.link === null ? undefined : /^<\/events(\?[^>]+)>; rel="next"$/.exec(p.link)![1];
    if (query !== undefined) assert.match(query, /types=plantUpdated%2CplantDeleted/);
  }
  assert.deepEqual(walked, all.filter((e) => e.type !== 'newPlant').map((e) => e.id));
  // The cursor is any event id, the filter's or not: after the first event, plant 1's later events.
  assert.deepEqual((await page(s, `?plant=1&after=${all[0]!.id}`)).events.map((e) => e.type), ['plantUpdated']);

  for (const bad of ['types=newplant', 'types=', 'types=newPlant,,plantDeleted', 'plant=x', 'plant=9223372036854775808']) {
    const refused = await page(s, `?${bad}`);
    assert.equal(refused.status, 400, bad);
    assert.equal((JSON.parse(refused.body) as { error: number }).error, 400);
  }

  // The stream: plant 2's events only, from the start of the feed; cut and resumed, nothing missed or twice.
  const one = await openStream(s.url, s.token.read, {}, `?plant=2&after=${all[0]!.id}`);
  const first = await one.received(1);
  assert.equal(plantOf(first[0]!.data), '2');
  one.close();
  await one.ended;
  assert.equal((await send(s, 'PUT', '/plants/1', '{"name":"not this one"}')).status, 200);
  assert.equal((await send(s, 'PUT', '/plants/2', '{"name":"this one"}')).status, 200);
  assert.equal((await send(s, 'DELETE', '/plants/2')).status, 204);
  const two = await openStream(s.url, s.token.read, { 'last-event-id': first[0]!.id! }, '?plant=2&types=plantDeleted,plantUpdated');
  const rest = await two.received(2);
  assert.deepEqual(rest.map((m) => [m.event, plantOf(m.data)]), [['plantUpdated', '2'], ['plantDeleted', '2']]);
  assert.ok((await page(s, `?plant=2&after=${rest[1]!.id}`)).events.length === 0);
  two.close();
});

test("one plant's events are read through webhook_events_plant, with and without types, not by reading the feed", async (t) => {
  const s = await startApp(t);
  // Enough events that the planners would rather use an index than read them all.
  await s.store.importPlants(Array.from({ length: 3_000 }, (_, i) => ({ id: BigInt(i + 1), name: `p${i}` })));
  await eventually(async () => (await s.store.events.lastPosition()) >= 3_000n, 'the imported plants\' events placed', 30_000);
  for (const shape of ['p', 'tp'] as const) {
    if (TEST_STORE === 'sqlite') {
      const db = new Database(s.databaseUrl.slice('sqlite:'.length), { readonly: true });
      try {
        const sql = readAfterStatement(db, shape).source;
        const plan = (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all({ after: 0n, limit: 100, maxBytes: 262_144, plant: 42n, ...(shape === 'tp' && { types: '["newPlant"]' }) }) as { detail: string }[]).map((r) => r.detail);
        assert.ok(plan.some((d) => /USING (COVERING )?INDEX webhook_events_plant/.test(d)), `${shape}: ${plan.join(' | ')}`);
        assert.ok(!plan.some((d) => /^SCAN webhook_events$/.test(d)), `${shape}: ${plan.join(' | ')}`);
      } finally {
        db.close();
      }
      continue;
    }
    const client = new pg.Client({ connectionString: s.databaseUrl });
    await client.connect();
    try {
      await client.query('ANALYZE webhook_events');
      const values: unknown[] = ['0', 100, 262_144, ...(shape === 'tp' ? [['newPlant']] : []), '42'];
      const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${readAfterSql(shape)}`, values);
      const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
      assert.match(plan, /webhook_events_plant/, `${shape}: ${plan}`);
      assert.doesNotMatch(plan, /Seq Scan on webhook_events/, `${shape}: ${plan}`);
    } finally {
      await client.end();
    }
  }
});

test('a store from before the filters (schema version 12) gets each event\'s plant from its payload when it migrates', async (t) => {
  const databaseUrl = await freshDatabaseUrl(t);
  const migrations = TEST_STORE === 'sqlite' ? SQLITE_MIGRATIONS : PG_MIGRATIONS;
  const old = await openStore(databaseUrl, { migrations: migrations.filter((m) => m.version <= 12) });
  await old.store.close();
  // Events as the previous release wrote them: no plant column yet.
  const rows: [string, string, string][] = [
    ['msg_AAAAAAAAAAAAAAAAAAAAA1', 'newPlant', '{"id":7,"name":"p7","version":2}'],
    ['msg_AAAAAAAAAAAAAAAAAAAAA2', 'newPlant', `{"id":${BIG},"name":"big","version":3}`],
    ['msg_AAAAAAAAAAAAAAAAAAAAA3', 'plantUpdated', '{"id":7,"name":"seven","version":4}'],
  ];
  const insert = 'INSERT INTO webhook_events (id, type, payload, created_at, position) VALUES';
  if (TEST_STORE === 'sqlite') {
    const db = new Database(databaseUrl.slice('sqlite:'.length));
    rows.forEach(([id, type, payload], i) => db.prepare(`${insert} (?, ?, ?, ?, ?)`).run(id, type, payload, Date.now(), i + 1));
    db.close();
  } else {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    for (const [i, [id, type, payload]] of rows.entries()) await client.query(`${insert} ($1, $2, $3, now(), $4)`, [id, type, payload, i + 1]);
    await client.end();
  }
  const { store } = await openStore(databaseUrl);
  try {
    assert.deepEqual((await store.events.readAfter(null, 10, undefined, { plant: 7n })).map((e) => e.type), ['newPlant', 'plantUpdated']);
    assert.deepEqual((await store.events.readAfter(null, 10, undefined, { plant: BIG })).map((e) => e.id), ['msg_AAAAAAAAAAAAAAAAAAAAA2']);
  } finally {
    // Closed here, not in an after hook: those run once the database is dropped.
    await store.close();
  }
});
