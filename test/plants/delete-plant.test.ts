// DELETE /plants/{id}: 204 with no body, then the plant is gone (GET 404, DELETE 404, not listed); the id
// can be created again; exact over int64; 400 for bad ids with nothing deleted; plants:write scope.
// Semantic cases use the typed client (ids as bigint); the raw 204 bytes, the plain-fetch 204 and ids
// that are not int64s (which the client cannot send) stay raw.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { NewPlant, PlantStoreClient } from '@plant-store/client';
import { startApp, type TestApp } from '../helpers/app.js';
import { parseRawResponse, rawHttp } from '../helpers/raw-request.js';
import { clientError, clientFor } from '../helpers/client.js';
import {
  ABOVE_2_53, BAD_IDS, INT64_MAX, INT64_MIN, call, createPlant, expectError, label, plantOf, sortIds, type PlantText,
} from './read-support.js';

/** Raw DELETE, for ids the typed client cannot send. */
function del(s: TestApp, id: string, token: string | null = s.token.write) {
  return call(s, `/plants/${id}`, { method: 'DELETE', token });
}

/** The typed clients of a test app: write, read, both scopes, and none. */
function clients(s: TestApp) {
  return { write: clientFor(s, s.token.write), read: clientFor(s, s.token.read), all: clientFor(s, s.token.all), anonymous: clientFor(s) };
}

/** DELETE /plants/{id} through the client. */
function remove(client: PlantStoreClient, id: string | bigint) {
  return client.DELETE('/plants/{id}', { params: { path: { id: BigInt(id) } } });
}

/** GET /plants/{id} through the client: asserts 200 JSON and returns the plant. */
async function read(client: PlantStoreClient, id: string | bigint): Promise<NewPlant> {
  const { data, response } = await client.GET('/plants/{id}', { params: { path: { id: BigInt(id) } } });
  assert.equal(response.status, 200, `GET ${id}`);
  assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
  return data!;
}

/** A 204 through the client: no data, no error, no body. */
async function assertDeleted(result: Awaited<ReturnType<typeof remove>>, what = '') {
  assert.equal(result.response.status, 204, what);
  assert.equal(result.data, undefined, what);
  assert.equal(result.error, undefined, what);
  assert.equal(await result.response.text(), '', what);
}

/** The ids GET /plants?limit=1000 lists, as digits. */
async function listed(client: PlantStoreClient): Promise<string[]> {
  const { data, response } = await client.GET('/plants', { params: { query: { limit: 1000 } } });
  assert.equal(response.status, 200);
  return data!.map((p) => String(p.id));
}

test('DELETE /plants/{id}', async (t) => {
  const s = await startApp(t);
  const plants: PlantText[] = [
    { id: '1', name: 'fern', tag: 'green' },
    { id: '2', name: 'moss' },
    { id: '3', name: 'ivy', tag: 'climber' },
    { id: INT64_MAX, name: 'max' },
    { id: '9223372036854775806', name: 'max - 1' },
    { id: INT64_MIN, name: 'min' },
    { id: '-9223372036854775807', name: 'min + 1' },
    { id: ABOVE_2_53, name: '2^53 + 1' },
    { id: '9007199254740992', name: '2^53' },
    { id: '-9007199254740993', name: '-(2^53 + 1)' },
    { id: '-9007199254740992', name: '-(2^53)' },
  ];
  for (const p of plants) await createPlant(s, p);
  const remaining = new Set(plants.map((p) => p.id));
  const c = clients(s);

  await t.test('204 with no body at all: no Content-Type, no body bytes', async () => {
    const raw = await rawHttp(s.port, `DELETE /plants/1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.token.write}\r\nConnection: close\r\n\r\n`, 200);
    const res = parseRawResponse(raw);
    assert.equal(res.status, 204, raw);
    assert.equal(res.body, '', 'nothing after the headers');
    assert.equal(res.headers['content-type'], undefined);
    assert.ok(res.headers['content-length'] === undefined || res.headers['content-length'] === '0');
    assert.equal(res.headers['transfer-encoding'], undefined);
    remaining.delete('1');
  });

  await t.test('then GET is 404, DELETE again is 404, and the list no longer has it', async () => {
    clientError(await c.read.GET('/plants/{id}', { params: { path: { id: 1n } } }), 404);
    clientError(await remove(c.write, 1n), 404);
    assert.deepEqual(await listed(c.read), sortIds(remaining));
  });

  await t.test('a fetch client sees 204 and an empty body; the connection stays usable', async () => {
    const res = await del(s, '2');
    assert.equal(res.status, 204);
    assert.equal(await res.text(), '');
    remaining.delete('2');
    assert.deepEqual(await plantOf(await call(s, '/plants/3')), { id: '3', name: 'ivy', tag: 'climber' });
  });

  await t.test('after a delete the id can be created again, with a different name (200, not 409)', async () => {
    const again = await c.write.POST('/plants', { body: { id: 1n, name: 'palm' } });
    assert.equal(again.response.status, 200);
    assert.deepEqual(again.data, { name: 'palm' });
    assert.equal(again.response.headers.get('location'), '/plants/1');
    // The old tag is gone with the old plant.
    assert.deepEqual(await read(c.read, 1n), { id: 1n, name: 'palm' });
    // And the new plant is an ordinary one: an identical replay is 200, a different one 409.
    assert.equal((await c.write.POST('/plants', { body: { id: 1n, name: 'palm' } })).response.status, 200);
    clientError(await c.write.POST('/plants', { body: { id: 1n, name: 'fern', tag: 'green' } }), 409);
    // Same name as before the delete is fine too.
    clientError(await remove(c.write, 2n), 404);
    assert.equal((await c.write.POST('/plants', { body: { id: 2n, name: 'moss' } })).response.status, 200);
    assert.deepEqual(await read(c.read, 2n), { id: 2n, name: 'moss' });
    remaining.add('1');
    remaining.add('2');
  });

  await t.test('int64 edges: each delete removes exactly that id, never its double-sharing neighbour', async () => {
    for (const [id, neighbour] of [
      [INT64_MAX, '9223372036854775806'],
      [INT64_MIN, '-9223372036854775807'],
      [ABOVE_2_53, '9007199254740992'],
      ['-9007199254740993', '-9007199254740992'],
    ] as const) {
      await assertDeleted(await remove(c.write, id), id);
      remaining.delete(id);
      clientError(await c.read.GET('/plants/{id}', { params: { path: { id: BigInt(id) } } }), 404, id);
      assert.equal((await read(c.read, neighbour)).id, BigInt(neighbour));
      assert.deepEqual(await listed(c.read), sortIds(remaining));
      // Created again under the exact id.
      assert.equal((await c.write.POST('/plants', { body: { id: BigInt(id), name: 'reborn' } })).response.status, 200);
      assert.deepEqual(await read(c.read, id), { id: BigInt(id), name: 'reborn' });
      remaining.add(id);
    }
  });

  await t.test('absent ids are 404 Error and delete nothing', async () => {
    for (const id of [4n, -1n, 0n, 9223372036854775805n, 9007199254740994n]) {
      clientError(await remove(c.write, id), 404, String(id));
    }
    assert.deepEqual(await listed(c.read), sortIds(remaining));
  });

  for (const id of BAD_IDS) {
    await t.test(`id ${label(id)} is 400 Error and deletes nothing`, async () => {
      await expectError(await del(s, encodeURIComponent(id)), 400, id);
    });
  }

  await t.test('after all the 400s (and a DELETE of /plants/, 404) every plant is still there', async () => {
    await expectError(await del(s, '+1'), 400);
    await expectError(await del(s, ''), 404);
    assert.deepEqual(await listed(c.read), sortIds(remaining));
    assert.equal(await s.store.countPlants(), remaining.size);
  });
});

test('DELETE /plants/{id}: concurrent deletes of one plant, exactly one 204', async (t) => {
  const s = await startApp(t);
  const c = clients(s);
  for (const id of [5n, BigInt(INT64_MAX)]) {
    assert.equal((await c.write.POST('/plants', { body: { id, name: 'once' } })).response.status, 200);
    const results = await Promise.all(Array.from({ length: 10 }, () => remove(c.write, id)));
    const statuses = results.map((r) => r.response.status).sort();
    assert.deepEqual(statuses, [204, ...Array(9).fill(404)], String(id));
    for (const r of results) if (r.response.status === 404) clientError(r, 404);
    clientError(await c.read.GET('/plants/{id}', { params: { path: { id } } }), 404);
  }
});

test('DELETE /plants/{id}: needs plants:write', async (t) => {
  const s = await startApp(t);
  const c = clients(s);
  await createPlant(s, { id: '1', name: 'fern' });

  await t.test('a read-only token is 403 insufficient_scope naming plants:write, and the plant stays', async () => {
    const result = await remove(c.read, 1n);
    const challenge = result.response.headers.get('www-authenticate') ?? '';
    assert.match(challenge, /error="insufficient_scope"/);
    assert.match(challenge, /scope="plants:write"/);
    clientError(result, 403);
    clientError(await remove(c.read, 404n), 403);
    // Raw: an id that is not an int64 is still refused by scope first.
    await expectError(await del(s, 'abc', s.token.read), 403);
    assert.deepEqual(await read(c.read, 1n), { id: 1n, name: 'fern' });
  });

  await t.test('no token is 401 with the Bearer challenge, and the plant stays', async () => {
    const result = await remove(c.anonymous, 1n);
    assert.equal(result.response.headers.get('www-authenticate'), 'Bearer realm="plant-store"');
    clientError(result, 401, '1');
    // Raw: an id that is not an int64.
    const res = await del(s, 'abc', null);
    assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="plant-store"');
    await expectError(res, 401, 'abc');
    assert.deepEqual(await read(c.read, 1n), { id: 1n, name: 'fern' });
  });

  await t.test('a write-only token deletes (204); one with both scopes too', async () => {
    await assertDeleted(await remove(c.write, 1n));
    assert.equal((await c.write.POST('/plants', { body: { id: 1n, name: 'fern' } })).response.status, 200);
    await assertDeleted(await remove(c.all, 1n));
    clientError(await c.read.GET('/plants/{id}', { params: { path: { id: 1n } } }), 404);
  });
});
