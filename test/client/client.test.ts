// The typed client (@plant-store/client) against a real service: every operation of the document, pagination
// through Link, int64 ids exact in both directions, and errors as typed Error bodies.
import { test } from 'node:test';
import assert from 'node:assert/strict';
// The client package, as a consumer imports it (packages/client, linked into node_modules as a workspace).
import { createPlantStoreClient, etagOf, followEvents, listAllPlants, nextPlantsPage, type FeedEvent, type ErrorBody, type NewPlant, type PlantStoreClient } from '@plant-store/client';
import { startApp, type TestApp } from '../helpers/app.js';
import { storedPlant } from '../helpers/stored-plant.js';
import { VERSION } from '../../src/health/version.js';

const INT64_MAX = 9223372036854775807n;
const INT64_MIN = -9223372036854775808n;
const ABOVE_2_53 = 9007199254740993n; // JSON.parse reads it as 9007199254740992

function clients(s: TestApp) {
  const baseUrl = s.url;
  return {
    all: createPlantStoreClient({ baseUrl, token: s.token.all }),
    read: createPlantStoreClient({ baseUrl, token: s.token.read }),
    anonymous: createPlantStoreClient({ baseUrl }),
  };
}

function assertError(error: ErrorBody | undefined, response: Response, status: number): ErrorBody {
  assert.equal(response.status, status);
  assert.ok(error, `expected an Error body for ${status}`);
  assert.equal(error.error, status);
  assert.equal(typeof error.message, 'string');
  assert.ok(error.message.length > 0);
  return error;
}

test('addPlant, getPlant, deletePlant: int64 ids beyond 2^53 round-trip exactly as bigint', async (t) => {
  const s = await startApp(t);
  const { all } = clients(s);
  for (const id of [INT64_MAX, ABOVE_2_53, INT64_MIN, 1n]) {
    const created = await all.POST('/plants', { body: { id, name: `plant ${id}`, tag: 'exact' } });
    assert.equal(created.response.status, 200);
    assert.deepEqual(created.data, { name: `plant ${id}`, tag: 'exact' });
    assert.equal(created.response.headers.get('location'), `/plants/${id}`);
    assert.deepEqual(await storedPlant(s.store, id), { id, name: `plant ${id}`, tag: 'exact' });

    const read = await all.GET('/plants/{id}', { params: { path: { id } } });
    assert.equal(read.response.status, 200);
    assert.deepEqual(read.data, { id, name: `plant ${id}`, tag: 'exact' });
    assert.equal(typeof read.data?.id, 'bigint');
  }
  // JSON.parse on the same bytes would have lost the last digit; the client did not.
  const raw = await fetch(`${s.url}/plants/${ABOVE_2_53}`, { headers: { authorization: `Bearer ${s.token.read}` } });
  assert.equal((JSON.parse(await raw.text()) as { id: number }).id, 9007199254740992);

  const deleted = await all.DELETE('/plants/{id}', { params: { path: { id: ABOVE_2_53 } } });
  assert.equal(deleted.response.status, 204);
  assert.equal(deleted.data, undefined);
  assert.equal(deleted.error, undefined);
  const gone = await all.GET('/plants/{id}', { params: { path: { id: ABOVE_2_53 } } });
  assertError(gone.error, gone.response, 404);
  assert.equal(gone.data, undefined);
  const again = await all.DELETE('/plants/{id}', { params: { path: { id: ABOVE_2_53 } } });
  assertError(again.error, again.response, 404);
});

test('addPlant is idempotent by id and a conflicting plant is a typed 409 Error', async (t) => {
  const s = await startApp(t);
  const { all } = clients(s);
  const plant: NewPlant = { id: INT64_MAX, name: 'Monstera', tag: 'tropical' };
  assert.deepEqual((await all.POST('/plants', { body: plant })).data, { name: 'Monstera', tag: 'tropical' });
  assert.deepEqual((await all.POST('/plants', { body: plant })).data, { name: 'Monstera', tag: 'tropical' });
  const conflict = await all.POST('/plants', { body: { ...plant, name: 'Fern' } });
  assert.equal(conflict.data, undefined);
  assert.match(assertError(conflict.error, conflict.response, 409).message, /9223372036854775807/);
});

test('updatePlant and patchPlant through the client: the ETag read goes back in If-Match; a stale one is a typed 412 and changes nothing', async (t) => {
  const s = await startApp(t);
  const { all } = clients(s);
  const path = { id: ABOVE_2_53 };
  await all.POST('/plants', { body: { id: ABOVE_2_53, name: 'Monstera' } });
  const read = await all.GET('/plants/{id}', { params: { path } });
  const etag = read.response.headers.get('etag');
  assert.match(etag ?? '', /^"\d+"$/);
  const updated = await all.PUT('/plants/{id}', { params: { path, header: { 'If-Match': etag! } }, body: { name: 'Fern', tag: 'shade' } });
  assert.deepEqual(updated.data, { id: ABOVE_2_53, name: 'Fern', tag: 'shade' });
  assert.notEqual(updated.response.headers.get('etag'), etag);
  const stale = await all.PUT('/plants/{id}', { params: { path, header: { 'If-Match': etag! } }, body: { name: 'Moss' } });
  assert.match(assertError(stale.error, stale.response, 412).message, /If-Match/);
  assert.deepEqual((await all.GET('/plants/{id}', { params: { path } })).data, { id: ABOVE_2_53, name: 'Fern', tag: 'shade' });
  // PATCH goes as a JSON Merge Patch: null removes the tag; the ETag helper reads what to send back.
  const current = etagOf((await all.GET('/plants/{id}', { params: { path } })).response)!;
  const patched = await all.PATCH('/plants/{id}', { params: { path, header: { 'If-Match': current } }, body: { tag: null } });
  assert.deepEqual(patched.data, { id: ABOVE_2_53, name: 'Fern' });
  assert.notEqual(etagOf(patched.response), current);
  const stalePatch = await all.PATCH('/plants/{id}', { params: { path, header: { 'If-Match': current } }, body: { name: 'Moss' } });
  assert.equal(assertError(stalePatch.error, stalePatch.response, 412).error, 412);
});

test('listPlants pages through Link rel="next" with exact ids, by hand and with listAllPlants', async (t) => {
  const s = await startApp(t);
  const { all } = clients(s);
  const ids = [INT64_MIN, -1n, 0n, 7n, ABOVE_2_53 - 2n, ABOVE_2_53, ABOVE_2_53 + 1n, INT64_MAX];
  for (const id of ids) await all.POST('/plants', { body: { id, name: `p${id}`, ...(id % 2n === 0n && { tag: 'even' }) } });

  const seen: NewPlant[] = [];
  const fetchPage = (query: NonNullable<ReturnType<typeof nextPlantsPage>>) => all.GET('/plants', { params: { query } });
  let query: ReturnType<typeof nextPlantsPage> = { limit: 3 };
  let pages = 0;
  while (query) {
    const page = await fetchPage(query);
    assert.equal(page.response.status, 200);
    assert.ok(page.data);
    assert.ok(page.data.length <= 3);
    seen.push(...page.data);
    pages++;
    query = nextPlantsPage(page.response);
    if (query) assert.equal(query.after, page.data.at(-1)?.id);
  }
  assert.equal(pages, 3);
  assert.deepEqual(seen.map((p) => p.id), ids);
  assert.ok(seen.every((p) => typeof p.id === 'bigint'));
  // A list item carries its version too, a bigint like the ids.
  const zero = seen.find((p) => p.id === 0n) as NewPlant & { version?: bigint };
  assert.equal(typeof zero.version, 'bigint');
  assert.deepEqual(zero, { id: 0n, name: 'p0', tag: 'even', version: zero.version });

  const everything: NewPlant[] = [];
  for await (const p of listAllPlants(all, { limit: 2 })) everything.push(p);
  assert.deepEqual(everything, seen);

  const even: bigint[] = [];
  for await (const p of listAllPlants(all, { limit: 1, tag: 'even' })) even.push(p.id);
  assert.deepEqual(even, ids.filter((id) => id % 2n === 0n));

  // A name order pages on name and id; the links carry both, and q, through the typed query.
  const byName: bigint[] = [];
  for await (const p of listAllPlants(all, { limit: 2, sort: '-name', q: 'P90' })) byName.push(p.id);
  const named = seen.filter((p) => p.name.toLowerCase().includes('p90'));
  assert.deepEqual(byName, named.sort((a, b) => (a.name < b.name ? 1 : a.name > b.name ? -1 : a.id < b.id ? 1 : -1)).map((p) => p.id));
  assert.ok(byName.length >= 3, 'more than one page');

  const afterQuery = await all.GET('/plants', { params: { query: { after: ABOVE_2_53, limit: 10 } } });
  assert.deepEqual(afterQuery.data?.map((p) => p.id), [ABOVE_2_53 + 1n, INT64_MAX]);
  assert.equal(nextPlantsPage(afterQuery.response), undefined);
});

test('errors surface as typed Error bodies: 400, 401, 403', async (t) => {
  const s = await startApp(t);
  const { all, read, anonymous } = clients(s);
  const bad = await all.GET('/plants', { params: { query: { limit: 0 } } });
  assertError(bad.error, bad.response, 400);
  const noName = await all.POST('/plants', { body: { id: 1n } as NewPlant });
  assert.match(assertError(noName.error, noName.response, 400).message, /name/);
  const outOfRange = await all.POST('/plants', { body: { id: INT64_MAX + 1n, name: 'too big' } });
  assertError(outOfRange.error, outOfRange.response, 400);
  const unauthenticated = await anonymous.GET('/plants');
  assertError(unauthenticated.error, unauthenticated.response, 401);
  assert.match(unauthenticated.response.headers.get('www-authenticate') ?? '', /^Bearer realm="plant-store"/);
  const forbidden = await read.POST('/plants', { body: { id: 2n, name: 'nope' } });
  assertError(forbidden.error, forbidden.response, 403);
  await assert.rejects(async () => {
    for await (const _ of listAllPlants(anonymous)) void _;
  }, (err: Error & { status?: number; body?: ErrorBody }) => err.name === 'PlantStoreError' && err.status === 401 && err.body?.error === 401);
});

test('webhooks CRUD, deliveries and retry with a webhooks:manage and plants:read token', async (t) => {
  const s = await startApp(t);
  const manage = (await s.tokens.create({ name: 'hooks', scopes: ['webhooks:manage', 'plants:read'] })).secret;
  const hooks: PlantStoreClient = createPlantStoreClient({ baseUrl: s.url, token: manage });

  const created = await hooks.POST('/webhooks', { body: { url: 'https://1.1.1.1/hooks/plants', description: 'inventory' } });
  assert.equal(created.response.status, 201);
  assert.ok(created.data);
  const { secret, ...subscription } = created.data;
  assert.match(secret, /^whsec_/);
  assert.match(subscription.id, /^wh_/);
  assert.equal(created.response.headers.get('location'), `/webhooks/${subscription.id}`);
  assert.deepEqual(subscription.events, ['newPlant', 'plantUpdated', 'plantDeleted']);
  assert.equal(subscription.active, true);

  const one = await hooks.GET('/webhooks/{id}', { params: { path: { id: subscription.id } } });
  assert.deepEqual(one.data, subscription);
  const list = await hooks.GET('/webhooks');
  assert.deepEqual(list.data, [subscription]);

  const deliveries = await hooks.GET('/webhooks/{id}/deliveries', { params: { path: { id: subscription.id }, query: { limit: 10 } } });
  assert.deepEqual(deliveries.data, []);
  const retry = await hooks.POST('/webhooks/{id}/deliveries/{deliveryId}/retry', {
    params: { path: { id: subscription.id, deliveryId: 'whd_nope' } },
  });
  assertError(retry.error, retry.response, 404);

  const badUrl = await hooks.POST('/webhooks', { body: { url: 'http://127.0.0.1/hook' } });
  assertError(badUrl.error, badUrl.response, 400);
  const plantsOnly = await createPlantStoreClient({ baseUrl: s.url, token: s.token.all }).GET('/webhooks');
  assertError(plantsOnly.error, plantsOnly.response, 403);

  const deleted = await hooks.DELETE('/webhooks/{id}', { params: { path: { id: subscription.id } } });
  assert.equal(deleted.response.status, 204);
  const gone = await hooks.GET('/webhooks/{id}', { params: { path: { id: subscription.id } } });
  assertError(gone.error, gone.response, 404);
  assert.deepEqual((await hooks.GET('/webhooks')).data, []);
});

test('health, readiness and the document through the client', async (t) => {
  const s = await startApp(t);
  const { anonymous } = clients(s);
  assert.deepEqual((await anonymous.GET('/healthz')).data, { status: 'ok', version: VERSION });
  assert.deepEqual((await anonymous.GET('/readyz')).data, { status: 'ok', version: VERSION });
  const doc = (await anonymous.GET('/openapi.json')).data as { openapi?: string };
  assert.equal(doc.openapi, '3.1.0');
});

test('followEvents yields every event after the cursor, then new ones as they commit, with exact ids; abort ends it', async (t) => {
  const s = await startApp(t);
  const { all, read } = clients(s);
  assert.equal((await all.POST('/plants', { body: { id: ABOVE_2_53, name: 'before' } })).response.status, 200);
  const controller = new AbortController();
  const seen: FeedEvent[] = [];
  const following = (async () => {
    for await (const e of followEvents(read, { wait: 5, limit: 1, signal: controller.signal })) {
      seen.push(e);
      if (seen.length === 1) {
        // Written while the follower runs: it sees them as they commit.
        await all.PUT('/plants/{id}', { params: { path: { id: ABOVE_2_53 } }, body: { name: 'after' } });
        await all.DELETE('/plants/{id}', { params: { path: { id: ABOVE_2_53 } } });
      }
      if (seen.length === 3) controller.abort();
    }
  })();
  await following;
  assert.deepEqual(seen.map((e) => [e.type, e.data.id]), [['newPlant', ABOVE_2_53], ['plantUpdated', ABOVE_2_53], ['plantDeleted', ABOVE_2_53]]);
  // Resuming after the second event gives the third.
  const rest: FeedEvent[] = [];
  const again = new AbortController();
  for await (const e of followEvents(read, { after: seen[1]!.id, wait: 1, signal: again.signal })) {
    rest.push(e);
    again.abort();
  }
  assert.deepEqual(rest, [seen[2]]);
  // A cursor the service never gave is a typed error.
  await assert.rejects(async () => {
    for await (const _ of followEvents(read, { after: `msg_${'B'.repeat(22)}` })) void _;
  }, (err: Error & { status?: number }) => err.name === 'PlantStoreError' && err.status === 400);
});
