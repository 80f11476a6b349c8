import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createPlantStoreClient } from '@plant-store/client';
import { startApp, errorOf } from './helpers/app.js';
import { storedPlant } from './helpers/stored-plant.js';

test('a valid plant with a write token is created and echoed as a Plant', async (t) => {
  const s = await startApp(t);
  const client = createPlantStoreClient({ baseUrl: s.url, token: s.token.write });
  const { data, response } = await client.POST('/plants', { body: { id: 1n, name: 'fern', tag: 'green' } });
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
  assert.equal(response.headers.get('location'), '/plants/1');
  assert.deepEqual(data, { name: 'fern', tag: 'green' });
  assert.deepEqual(await storedPlant(s.store, 1n), { id: 1n, name: 'fern', tag: 'green' });
});

test('an unknown path is a 404 Error', async (t) => {
  const s = await startApp(t);
  const res = await fetch(`${s.url}/nope`);
  assert.equal(res.status, 404);
  await errorOf(res);
});
