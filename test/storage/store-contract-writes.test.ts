// The Store port's promises about changing plants, on the store under test (PLANT_STORE_TEST_STORE): versions,
// replace and delete sharing the group commit with creates, patches merged at the commit, and the observers
// that hear each group commit.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { PlantRecord } from '../../src/plants/plant.js';
import { freshStore, unversioned } from '../helpers/contract-store.js';
import { MAX } from './store-contract-support.js';

test('versions: every write of a plant takes a new one, a replay and an unchanged replace keep it, none is reused after a delete', async (t) => {
  const store = await freshStore(t);
  const created = await store.createPlant({ id: MAX, name: 'fern' });
  assert.equal(created.kind, 'created');
  const v1 = (created as { version: bigint }).version;
  assert.equal(typeof v1, 'bigint');
  assert.deepEqual(await store.createPlant({ id: MAX, name: 'fern' }), { kind: 'replayed', version: v1 });
  assert.deepEqual(await store.getPlant(MAX), { id: MAX, name: 'fern', version: v1 });

  const renamed = await store.replacePlant({ id: MAX, name: 'moss', tag: 'green' });
  assert.equal(renamed.kind, 'changed');
  const v2 = (renamed as { plant: { version: bigint } }).plant.version;
  assert.ok(v2 > v1, `${v2} > ${v1}`);
  assert.deepEqual(renamed, { kind: 'changed', plant: { id: MAX, name: 'moss', tag: 'green', version: v2 } });
  // The same content again writes nothing and keeps the version; so does it with the current version required.
  assert.deepEqual(await store.replacePlant({ id: MAX, name: 'moss', tag: 'green' }), { kind: 'unchanged', plant: { id: MAX, name: 'moss', tag: 'green', version: v2 } });
  assert.deepEqual(await store.replacePlant({ id: MAX, name: 'moss', tag: 'green' }, v2), { kind: 'unchanged', plant: { id: MAX, name: 'moss', tag: 'green', version: v2 } });
  // A replay of the original create is compared with the plant as it is now.
  assert.deepEqual(await store.createPlant({ id: MAX, name: 'fern' }), { kind: 'conflict', existing: { id: MAX, name: 'moss', tag: 'green', version: v2 } });

  // A required version that is not the plant's changes nothing, for a replace and for a delete.
  const current = { id: MAX, name: 'moss', tag: 'green', version: v2 };
  assert.deepEqual(await store.replacePlant({ id: MAX, name: 'ivy' }, v1), { kind: 'version-mismatch', current });
  assert.deepEqual(await store.replacePlant({ id: MAX, name: 'moss', tag: 'green' }, v1), { kind: 'version-mismatch', current });
  assert.deepEqual(await store.deletePlant(MAX, v1), { kind: 'version-mismatch', current });
  assert.deepEqual(await store.getPlant(MAX), current);
  // Absent plants are not found, whatever is required.
  assert.deepEqual(await store.replacePlant({ id: 5n, name: 'x' }), { kind: 'not-found' });
  assert.deepEqual(await store.replacePlant({ id: 5n, name: 'x' }, v2), { kind: 'not-found' });
  assert.deepEqual(await store.deletePlant(5n, v2), { kind: 'not-found' });

  // Removing the tag is a change; the required version matching lets it through.
  const untagged = await store.replacePlant({ id: MAX, name: 'moss' }, v2);
  assert.equal(untagged.kind, 'changed');
  const v3 = (untagged as { plant: { version: bigint } }).plant.version;
  assert.ok(v3 > v2);
  assert.deepEqual(await store.getPlant(MAX), { id: MAX, name: 'moss', version: v3 });
  assert.deepEqual(await store.deletePlant(MAX, v3), { kind: 'changed', plant: { id: MAX, name: 'moss', version: v3 } });
  // Made again under the same id: a version none of the earlier ones had, so an old ETag cannot match it.
  const again = await store.createPlant({ id: MAX, name: 'moss' });
  assert.equal(again.kind, 'created');
  assert.ok((again as { version: bigint }).version > v3);
  assert.deepEqual(await store.replacePlant({ id: MAX, name: 'ivy' }, v3), { kind: 'version-mismatch', current: { id: MAX, name: 'moss', version: (again as { version: bigint }).version } });
});

test('replacePlant and deletePlant share the group commit with creates; concurrent replaces requiring one version: exactly one is applied', async (t) => {
  const store = await freshStore(t);
  const commits: number[] = [];
  store.observe((o) => {
    if (o.kind === 'commit') commits.push(o.size);
  });
  const created = await store.createPlant({ id: 1n, name: 'start' });
  const v = (created as { version: bigint }).version;
  commits.length = 0;
  const outcomes = await Promise.all(Array.from({ length: 20 }, (_, i) => store.replacePlant({ id: 1n, name: `writer ${i}` }, v)));
  const winners = outcomes.flatMap((o, i) => (o.kind === 'changed' ? [i] : []));
  assert.equal(winners.length, 1, JSON.stringify(outcomes.map((o) => o.kind)));
  assert.ok(outcomes.every((o) => o.kind === 'changed' || o.kind === 'version-mismatch'));
  assert.deepEqual(unversioned(await store.getPlant(1n)), { id: 1n, name: `writer ${winners[0]}` });
  // Twenty writes submitted in one turn share commits: far fewer commits than writes.
  assert.ok(commits.length < 20, `${commits.length} commits for 20 writes`);
  // Creates, replaces and deletes of different plants in one turn all land.
  const mixed = await Promise.all([
    store.createPlant({ id: 2n, name: 'two' }),
    store.replacePlant({ id: 1n, name: 'one' }),
    store.deletePlant(2n),
    store.createPlant({ id: 3n, name: 'three' }),
  ]);
  assert.deepEqual(mixed.map((o) => o.kind), ['created', 'changed', 'changed', 'created']);
  assert.deepEqual((await store.listPlants({ limit: 10 })).map((p) => [p.id, p.name]), [[1n, 'one'], [3n, 'three']]);
});

test('patchPlant merges at the commit: members set, kept and removed; unchanged keeps the version; If-Match versions, absent plants and over-long results; concurrent patches all apply in turn', async (t) => {
  const store = await freshStore(t);
  const v1 = ((await store.createPlant({ id: MAX, name: 'fern', tag: 'green' })) as { version: bigint }).version;
  const renamed = await store.patchPlant(MAX, { name: 'moss \u0000 🌵' });
  assert.equal(renamed.kind, 'changed');
  const v2 = (renamed as { plant: { version: bigint } }).plant.version;
  assert.ok(v2 > v1);
  assert.deepEqual(renamed, { kind: 'changed', plant: { id: MAX, name: 'moss \u0000 🌵', tag: 'green', version: v2 } });
  assert.deepEqual(await store.getPlant(MAX), { id: MAX, name: 'moss \u0000 🌵', tag: 'green', version: v2 });
  // Setting what is there, or nothing, writes nothing and keeps the version.
  const same = { kind: 'unchanged', plant: { id: MAX, name: 'moss \u0000 🌵', tag: 'green', version: v2 } };
  assert.deepEqual(await store.patchPlant(MAX, {}), same);
  assert.deepEqual(await store.patchPlant(MAX, { tag: 'green' }, [v1, v2]), same);
  assert.deepEqual(await store.patchPlant(MAX, { tag: null }, [v1]), { kind: 'version-mismatch', current: same.plant });
  assert.deepEqual(await store.patchPlant(5n, { name: 'x' }), { kind: 'not-found' });
  const untagged = await store.patchPlant(MAX, { tag: null }, [v1, v2]);
  assert.deepEqual(unversioned(untagged), { kind: 'changed', plant: { id: MAX, name: 'moss \u0000 🌵' } });
  // A name stored before the length limit stays until a patch replaces it; a patch that keeps it is refused.
  await store.createPlant({ id: 6n, name: 'x'.repeat(300) });
  assert.deepEqual(await store.patchPlant(6n, { tag: 't' }), { kind: 'too-long', field: 'name', rule: 'name must be at most 256 characters long (Unicode code points)' });
  assert.deepEqual(unversioned(await store.patchPlant(6n, { name: 'short', tag: 't' })), { kind: 'changed', plant: { id: 6n, name: 'short', tag: 't' } });
  // One turn: a create and the patches of its plant share commits, each patch merged into what the one before stored.
  const patchOf = (i: number) => (i % 2 === 0 ? { name: `name ${i}` } : { tag: `tag ${i}` });
  const [created, ...patched] = await Promise.all([
    store.createPlant({ id: 7n, name: 'start' }),
    ...Array.from({ length: 20 }, (_, i) => store.patchPlant(7n, patchOf(i))),
  ]);
  assert.equal(created!.kind, 'created');
  const plants = patched.map((o, i) => ({ i, plant: o.kind === 'changed' ? o.plant : assert.fail(JSON.stringify(o)) }));
  plants.sort((a, b) => (a.plant.version < b.plant.version ? -1 : 1));
  assert.equal(new Set(plants.map((p) => p.plant.version)).size, 20);
  let stored: PlantRecord = { id: 7n, name: 'start' };
  for (const { i, plant } of plants) {
    stored = { ...stored, ...patchOf(i) };
    assert.deepEqual(unversioned(plant), stored, `patch ${i}`);
  }
  assert.deepEqual(await store.getPlant(7n), plants.at(-1)!.plant);
});

test('an observer of the store hears each group commit of createPlant with its size until removed', async (t) => {
  const store = await freshStore(t);
  const heard: { size: number; seconds: number; ok: boolean }[] = [];
  const remove = store.observe((o) => {
    if (o.kind === 'commit') heard.push(o);
  });
  // Creates submitted in one turn of the event loop share commits; every one is counted once.
  await Promise.all(Array.from({ length: 10 }, (_, i) => store.createPlant({ id: BigInt(i), name: `p${i}` })));
  assert.ok(heard.length >= 1);
  assert.equal(heard.reduce((n, c) => n + c.size, 0), 10);
  assert.ok(heard.every((c) => c.ok && c.seconds >= 0 && Number.isFinite(c.seconds)));
  remove();
  await store.createPlant({ id: 100n, name: 'unheard' });
  assert.equal(heard.reduce((n, c) => n + c.size, 0), 10);
});
