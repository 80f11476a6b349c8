// The Store port's promises about single plants, checked directly against the store under test
// (PLANT_STORE_TEST_STORE), so that every engine keeps the same ones: the engine itself, the create and import
// rules, many reads at once, and delete with count. The rest of the contract: store-contract-lists.test.ts (the
// list page), store-contract-writes.test.ts (versions, replace, patch, commits and their observers),
// store-contract-tokens.test.ts, store-contract-ports.test.ts (the other ports) and
// test/webhooks/delivery-store-*.test.ts (the webhook half), all on every engine.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { PlantRecord } from '../../src/plants/plant.js';
import { TEST_STORE } from '../helpers/app.js';
import { addSubscription } from '../helpers/webhooks.js';
import { sequenced } from '../helpers/events.js';
import { freshStore, unversioned } from '../helpers/contract-store.js';
import { ABOVE_2_53, MAX, MIN } from './store-contract-support.js';

test('the store under test is the engine the suite runs on', async (t) => {
  assert.equal((await freshStore(t)).engine, TEST_STORE);
});

test('createPlant: a free id is created; the same name and tag again is replayed; anything else is a conflict with the stored plant', async (t) => {
  const store = await freshStore(t);
  const fern: PlantRecord = { id: ABOVE_2_53, name: 'fern', tag: 'green' };
  assert.deepEqual(unversioned(await store.createPlant(fern)), { kind: 'created' });
  assert.deepEqual(unversioned(await store.createPlant({ ...fern })), { kind: 'replayed' });
  for (const other of [{ id: ABOVE_2_53, name: 'moss', tag: 'green' }, { id: ABOVE_2_53, name: 'fern' }, { id: ABOVE_2_53, name: 'fern', tag: 'blue' }]) {
    assert.deepEqual(unversioned(await store.createPlant(other)), { kind: 'conflict', existing: fern }, JSON.stringify(other, (_, v) => (typeof v === 'bigint' ? String(v) : v)));
  }
  // No tag is not the empty tag.
  assert.deepEqual(unversioned(await store.createPlant({ id: 2n, name: 'ivy' })), { kind: 'created' });
  assert.deepEqual(unversioned(await store.createPlant({ id: 2n, name: 'ivy', tag: '' })), { kind: 'conflict', existing: { id: 2n, name: 'ivy' } });
  // Concurrent creates of one id (one group commit): one is created, the same plant replays, another conflicts.
  const same = await Promise.all([store.createPlant({ id: 3n, name: 'a' }), store.createPlant({ id: 3n, name: 'a' }), store.createPlant({ id: 3n, name: 'b' })]);
  assert.deepEqual(unversioned(same), [{ kind: 'created' }, { kind: 'replayed' }, { kind: 'conflict', existing: { id: 3n, name: 'a' } }]);
  assert.deepEqual(unversioned(await store.getPlant(ABOVE_2_53)), fern);
  assert.equal(await store.countPlants(), 3);
});

test('importPlants: the create rules in order, a repeated id within the batch included; events only for new plants, delivered to subscribers', async (t) => {
  const store = await freshStore(t);
  await store.createPlant({ id: 1n, name: 'old' });
  await sequenced(store);
  const sub = await addSubscription(store, 'http://127.0.0.1:1/a');
  const outcomes = await store.importPlants(
    [
      { id: 1n, name: 'old' },
      { id: 1n, name: 'new' },
      { id: MAX, name: 'max', tag: 't' },
      { id: MAX, name: 'max', tag: 't' },
      { id: MAX, name: 'other' },
      { id: MIN, name: 'min' },
    ],
  );
  assert.deepEqual(unversioned(outcomes), [
    { kind: 'replayed' },
    { kind: 'conflict', existing: { id: 1n, name: 'old' } },
    { kind: 'created' },
    { kind: 'replayed' },
    { kind: 'conflict', existing: { id: MAX, name: 'max', tag: 't' } },
    { kind: 'created' },
  ]);
  assert.equal(await sequenced(store), 2);
  assert.equal(await store.webhooks.countPendingDeliveries(), 2);
  assert.equal((await store.webhooks.listDeliveries(sub.id, 10)).length, 2);
  assert.deepEqual((await store.events.readAfter(null, 10)).map((e) => e.type), ['newPlant', 'newPlant', 'newPlant']);
  assert.deepEqual(unversioned(await store.getPlant(MAX)), { id: MAX, name: 'max', tag: 't' });
  assert.equal(await store.countPlants(), 3);
  assert.deepEqual(await store.importPlants([]), []);
});

test('getPlant called many times at once: each call gets the plant of its own id (repeats and absent ids among them), more calls than one statement holds', async (t) => {
  const store = await freshStore(t);
  const stored: PlantRecord[] = Array.from({ length: 600 }, (_, i) => ({ id: ABOVE_2_53 + BigInt(2 * i), name: `p${i}`, ...(i % 3 === 0 && { tag: `t${i}` }) }));
  stored.push({ id: MAX, name: 'max' }, { id: MIN, name: 'min', tag: '' });
  await store.importPlants(stored);
  const byId = new Map(stored.map((p) => [p.id, p]));
  // Odd offsets are absent; 2^53 + 1 and its double's neighbour 2^53 must not be taken for one another.
  const asked = [...stored.map((p) => p.id), ...stored.map((p) => p.id + 1n).filter((id) => id !== MAX + 1n), ABOVE_2_53, ABOVE_2_53 - 1n, MAX, MIN, ABOVE_2_53];
  const got = await Promise.all(asked.map((id) => store.getPlant(id)));
  for (const [i, id] of asked.entries()) assert.deepEqual(unversioned(got[i]), byId.get(id), `getPlant(${id})`);
  // Each answer is the plant with its version, the same version as a lone read sees.
  assert.equal(got[0]!.version, (await store.getPlant(asked[0]!))!.version);
});

test('deletePlant removes a plant durably, then finds none; countPlants follows; the id is free again', async (t) => {
  const store = await freshStore(t);
  for (const id of [1n, 2n, MAX]) await store.createPlant({ id, name: `p${id}` });
  assert.equal(await store.countPlants(), 3);
  assert.deepEqual(unversioned(await store.deletePlant(MAX)), { kind: 'changed', plant: { id: MAX, name: `p${MAX}` } });
  assert.deepEqual(await store.deletePlant(MAX), { kind: 'not-found' });
  assert.deepEqual(await store.deletePlant(42n), { kind: 'not-found' });
  assert.equal(await store.getPlant(MAX), undefined);
  assert.deepEqual((await store.listPlants({ limit: 10 })).map((p) => p.id), [1n, 2n]);
  assert.equal(await store.countPlants(), 2);
  assert.deepEqual(unversioned(await store.createPlant({ id: MAX, name: 'again' })), { kind: 'created' });
  assert.equal(await store.countPlants(), 3);
});
