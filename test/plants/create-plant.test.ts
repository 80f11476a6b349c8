// POST /plants with a valid NewPlant: 200, the Plant body (name, tag only when sent), Location, a stored row.
// Semantic cases go through the typed client; the ones about the request text itself (field order,
// whitespace, the charset parameter) send raw bytes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { NewPlant } from '@plant-store/client';
import { startApp } from '../helpers/app.js';
import { clientFor } from '../helpers/client.js';
import { storedPlant } from '../helpers/stored-plant.js';

test('POST /plants with a valid NewPlant', async (t) => {
  const s = await startApp(t);
  const client = clientFor(s, s.token.write);

  await t.test('name and tag: 200, application/json, body exactly {name, tag}, Location, stored row', async () => {
    const { data, response } = await client.POST('/plants', { body: { id: 1n, name: 'fern', tag: 'green' } });
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /^application\/json(;|$)/);
    assert.equal(response.headers.get('location'), '/plants/1');
    assert.deepEqual(data, { name: 'fern', tag: 'green' });
    assert.deepEqual(Object.keys(data ?? {}), ['name', 'tag']);
    assert.deepEqual(await storedPlant(s.store, 1n), { id: 1n, name: 'fern', tag: 'green' });
  });

  await t.test('without tag: the body has no tag key at all (not null, not empty)', async () => {
    const { data, response } = await client.POST('/plants', { body: { id: 2n, name: 'moss' } });
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('location'), '/plants/2');
    const body = data as Record<string, unknown>;
    assert.deepEqual(body, { name: 'moss' });
    assert.equal('tag' in body, false);
    const stored = await storedPlant(s.store, 2n);
    assert.deepEqual(stored, { id: 2n, name: 'moss' });
    assert.equal(stored !== undefined && 'tag' in stored, false);
  });

  await t.test('the response never carries id, even though the request did', async () => {
    const { data, response } = await client.POST('/plants', { body: { id: 3n, name: 'ivy', tag: 'climber' } });
    assert.equal(response.status, 200);
    const body = data as Record<string, unknown>;
    assert.deepEqual(body, { name: 'ivy', tag: 'climber' });
    assert.equal('id' in body, false);
  });

  await t.test('unknown fields are accepted, ignored, not echoed and not stored', async () => {
    // Not a NewPlant as the types see it: the extra fields are the point.
    const body = { id: 4n, name: 'cactus', extra: { deep: [1, 2, { x: null }] }, status: 'sold', price: 1.5, tags: ['a'], id2: 99 } as NewPlant;
    const { data, response } = await client.POST('/plants', { body });
    assert.equal(response.status, 200);
    assert.deepEqual(data, { name: 'cactus' });
    assert.deepEqual(await storedPlant(s.store, 4n), { id: 4n, name: 'cactus' });
    assert.equal(await storedPlant(s.store, 99n), undefined);
  });

  await t.test('an unknown field named like a response field is not echoed either', async () => {
    const body = { id: 5n, name: 'aloe', error: 1, message: 'm', location: '/x' } as NewPlant;
    const { data, response } = await client.POST('/plants', { body });
    assert.equal(response.status, 200);
    assert.deepEqual(data, { name: 'aloe' });
    assert.equal(response.headers.get('location'), '/plants/5');
  });

  await t.test('field order does not matter', async () => {
    const res = await s.postPlant('{"tag": "t", "name": "palm", "id": 6}');
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { name: 'palm', tag: 't' });
    assert.deepEqual(await storedPlant(s.store, 6n), { id: 6n, name: 'palm', tag: 't' });
  });

  await t.test('an empty-string name and an empty-string tag are strings, stored as such', async () => {
    const { data, response } = await client.POST('/plants', { body: { id: 7n, name: '', tag: '' } });
    assert.equal(response.status, 200);
    assert.deepEqual(data, { name: '', tag: '' });
    assert.deepEqual(await storedPlant(s.store, 7n), { id: 7n, name: '', tag: '' });
  });

  await t.test('non-ASCII, escapes, NUL and astral characters round-trip exactly', async () => {
    const name = 'Zimmerpflanze \u00e9\u0301 \u4e2d\u6587 \ud83c\udf3f "quoted" \\ back\u0000slash\n';
    const tag = '\t\u2028\u2029';
    const { data, response } = await client.POST('/plants', { body: { id: 8n, name, tag } });
    assert.equal(response.status, 200);
    assert.deepEqual(data, { name, tag });
    assert.deepEqual(await storedPlant(s.store, 8n), { id: 8n, name, tag });
  });

  await t.test('the longest name (256 characters, maxLength) is stored whole', async () => {
    const name = 'n'.repeat(256);
    const { data, response } = await client.POST('/plants', { body: { id: 9n, name } });
    assert.equal(response.status, 200);
    assert.equal(data?.name, name);
    assert.equal((await storedPlant(s.store, 9n))?.name, name);
  });

  await t.test('id 0 and negative ids are valid int64s', async () => {
    for (const id of [0n, -1n, -42n]) {
      const { data, response } = await client.POST('/plants', { body: { id, name: `n${id}` } });
      assert.equal(response.status, 200, String(id));
      assert.deepEqual(data, { name: `n${id}` });
      assert.equal(response.headers.get('location'), `/plants/${id}`);
      assert.deepEqual(await storedPlant(s.store, id), { id, name: `n${id}` });
    }
  });

  await t.test('surrounding whitespace and a charset=utf-8 parameter are fine', async () => {
    const res = await s.postPlant(' \r\n\t{"id": 10, "name": "spaced"}\n ', { 'content-type': 'application/json; charset=utf-8' });
    assert.equal(res.status, 200);
    assert.deepEqual(await storedPlant(s.store, 10n), { id: 10n, name: 'spaced' });
  });

  await t.test('a token with both scopes may create plants too', async () => {
    const { data, response } = await clientFor(s, s.token.all).POST('/plants', { body: { id: 11n, name: 'both' } });
    assert.equal(response.status, 200);
    assert.deepEqual(data, { name: 'both' });
    assert.deepEqual(await storedPlant(s.store, 11n), { id: 11n, name: 'both' });
  });

  await t.test('every 200 above stored exactly one row per id', async () => {
    assert.equal(await s.store.countPlants(), 14);
  });
});
