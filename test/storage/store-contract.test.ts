// The Store port's promises, checked directly against the store under test (PLANT_STORE_TEST_STORE), so that
// every engine keeps the same ones: plants (create and import rules, reads, the list page, delete, count),
// tokens, and commit observers. The webhook half of the port (subscriptions, claims, attempts and their
// outcomes, nextDueAt, the backlog) is test/webhooks/delivery-store.test.ts, which runs on every engine too, and
// the rest of the ports (commitWrites, housekeeping, the event log, restores) is store-contract-ports.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { TokenRecord } from '../../src/auth/token.js';
import type { PlantQuery, PlantRecord } from '../../src/plants/plant.js';
import { WALK_AT_MATCHES } from '../../src/storage/sqlite/sqlite-plant-queries.js';
import { TEST_STORE } from '../helpers/app.js';
import { addSubscription } from '../helpers/webhooks.js';
import { sequenced } from '../helpers/events.js';
import { freshStore, unversioned } from '../helpers/contract-store.js';



const MAX = 2n ** 63n - 1n;
const MIN = -(2n ** 63n);
const ABOVE_2_53 = 2n ** 53n + 1n;

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

test('getPlant, listPlants and listPlantsJson: id order after a keyset, the tag filter, the page JSON with lastId and more', async (t) => {
  const store = await freshStore(t);
  const all: PlantRecord[] = [
    { id: MIN, name: 'min', tag: 'x' },
    { id: -1n, name: 'minus one' },
    { id: 0n, name: 'zero', tag: 'y' },
    { id: ABOVE_2_53, name: 'big "quoted" 🌿', tag: 'x' },
    { id: MAX, name: 'max', tag: 'x' },
  ];
  // Created out of order: lists are in id order, not insertion order.
  for (const p of [...all].reverse()) assert.deepEqual(unversioned(await store.createPlant(p)), { kind: 'created' });
  assert.equal(await store.getPlant(1n), undefined);
  for (const p of all) assert.deepEqual(unversioned(await store.getPlant(p.id)), p);

  assert.deepEqual(await store.listPlants({ limit: 10 }), all);
  assert.deepEqual(await store.listPlants({ limit: 2, after: -1n }), all.slice(2, 4));
  assert.deepEqual(await store.listPlants({ limit: 10, tag: 'x' }), all.filter((p) => p.tag === 'x'));
  assert.deepEqual(await store.listPlants({ limit: 10, tag: 'x', after: MIN }), all.filter((p) => p.tag === 'x').slice(1));
  assert.deepEqual(await store.listPlants({ limit: 10, tag: 'none' }), []);
  assert.deepEqual(await store.listPlants({ limit: 10, after: MAX }), []);

  // The page is the API's JSON: ids digit for digit, tag absent when not set, each item's version (checked, then
  // left out of the comparison); lastId and more describe it.
  const exact = (text: string) => {
    assert.doesNotMatch(text, /"id":"/, 'ids are JSON numbers');
    const items = JSON.parse(text.replace(/"id":(-?\d+)/g, '"id":"$1"')) as { id: string; name: string; tag?: string; version?: number }[];
    return items.map(({ version, ...plant }) => {
      assert.ok(Number.isInteger(version) && version! > 0, `the version of ${plant.id}: ${version}`);
      return plant;
    });
  };
  const asText = (ps: PlantRecord[]) => ps.map((p) => ({ id: String(p.id), name: p.name, ...(p.tag === undefined ? {} : { tag: p.tag }) }));
  const first = await store.listPlantsJson({ limit: 2 });
  assert.deepEqual(exact(first.json), asText(all.slice(0, 2)));
  assert.deepEqual({ lastId: first.lastId, more: first.more }, { lastId: -1n, more: true });
  const rest = await store.listPlantsJson({ limit: 3, after: first.lastId });
  assert.deepEqual(exact(rest.json), asText(all.slice(2)));
  assert.deepEqual({ lastId: rest.lastId, more: rest.more }, { lastId: MAX, more: false });
  assert.match(rest.json, /"id":9223372036854775807\b/);
  const tagged = await store.listPlantsJson({ limit: 2, tag: 'x' });
  assert.deepEqual(exact(tagged.json), asText([all[0]!, all[3]!]));
  assert.deepEqual({ lastId: tagged.lastId, more: tagged.more }, { lastId: ABOVE_2_53, more: true });
  const lastTagged = await store.listPlantsJson({ limit: 2, tag: 'x', after: ABOVE_2_53 });
  assert.deepEqual({ items: exact(lastTagged.json), lastId: lastTagged.lastId, more: lastTagged.more }, { items: asText([all[4]!]), lastId: MAX, more: false });
  // One plant has tag 'y' and plants follow it, none with the tag: more is about plants with the tag.
  const onlyY = await store.listPlantsJson({ limit: 1, tag: 'y' });
  assert.deepEqual({ lastId: onlyY.lastId, more: onlyY.more }, { lastId: 0n, more: false });
  const empty = await store.listPlantsJson({ limit: 5, after: MAX });
  assert.deepEqual(JSON.parse(empty.json), []);
  assert.equal(empty.lastId, undefined);
  assert.equal(empty.more, false);
});

test('listPlantsJson and countMatchingPlants: q matches the folded name with every character literal, name orders by the folded name both ways with the cursor, the count ignores cursor and limit', async (t) => {
  const store = await freshStore(t);
  const plants: PlantRecord[] = [
    { id: 1n, name: 'Émile\'s Ivy', tag: 'x' },
    { id: 2n, name: 'STRASSE fern' },
    { id: 3n, name: 'Straße moss', tag: 'x' },
    { id: 4n, name: '100%_real' },
    { id: 5n, name: 'émile again', tag: 'x' },
    { id: MAX, name: 'Z last' },
  ];
  for (const p of plants) assert.equal((await store.createPlant(p)).kind, 'created');
  const ids = (json: string) => [...json.matchAll(/"id":(-?\d+)/g)].map((m) => BigInt(m[1]!));
  assert.deepEqual(ids((await store.listPlantsJson({ limit: 10, q: 'ÉMILE' })).json), [1n, 5n]);
  assert.deepEqual(ids((await store.listPlantsJson({ limit: 10, q: 'emile' })).json), [1n, 5n], 'accents folded away');
  assert.deepEqual(ids((await store.listPlantsJson({ limit: 10, q: 'strasse' })).json), [2n, 3n]);
  assert.deepEqual(ids((await store.listPlantsJson({ limit: 10, q: '0%_' })).json), [4n]);
  assert.deepEqual(ids((await store.listPlantsJson({ limit: 10, q: '0_%' })).json), []);
  // Folded names (case and accents gone) by code points: digits, then "emile again" before "emile's ivy"
  // (space before apostrophe), "strasse fern", "strasse moss", "z last".
  const order = [4n, 5n, 1n, 2n, 3n, MAX].map((id) => plants.find((p) => p.id === id)!);
  const first = await store.listPlantsJson({ limit: 2, order: 'name' });
  assert.deepEqual(ids(first.json), order.slice(0, 2).map((p) => p.id));
  assert.deepEqual({ lastName: first.lastName, more: first.more }, { lastName: order[1]!.name, more: true });
  const next = await store.listPlantsJson({ limit: 10, order: 'name', after: first.lastId!, afterName: first.lastName! });
  assert.deepEqual(ids(next.json), order.slice(2).map((p) => p.id));
  const reversed = await store.listPlantsJson({ limit: 10, order: '-name', tag: 'x' });
  assert.deepEqual(ids(reversed.json), order.filter((p) => p.tag === 'x').reverse().map((p) => p.id));
  assert.deepEqual(ids((await store.listPlantsJson({ limit: 2, order: '-id' })).json), [MAX, 5n]);
  assert.equal(await store.countMatchingPlants({ limit: 1, q: 'émile', after: 1n, order: 'name', afterName: 'a' }), 2n);
  assert.equal(await store.countMatchingPlants({ limit: 1, tag: 'x' }), 3n);
  assert.equal(await store.countMatchingPlants({ limit: 1, tag: 'x', q: 'STRASSE' }), 1n);
  assert.equal(await store.countMatchingPlants({ limit: 1 }), BigInt(plants.length));
});

test('a q in a name order that many names match (SQLite walks the name index then) pages like one few match: every match once, in the name order, both ways, with a tag', async (t) => {
  const store = await freshStore(t);
  const n = WALK_AT_MATCHES + 200;
  const plants: PlantRecord[] = Array.from({ length: n }, (_, i) => ({
    id: BigInt(i - 100),
    name: i < 100 ? `moss ${i}` : `${['fern', 'Fern', 'FERN', 'éFern'][i % 4]} ${(i * 7919) % 1000}`,
    ...(i % 3 === 0 && { tag: 'x' }),
  }));
  await store.importPlants(plants);
  // The name order: folded name, name, id (these names are in the BMP, where UTF-16 order is code point order).
  const fold = (name: string) => name.normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase();
  const compareText = (x: string, y: string) => (x < y ? -1 : x > y ? 1 : 0);
  const byCodePoints = (a: PlantRecord, b: PlantRecord) => compareText(fold(a.name), fold(b.name)) || compareText(a.name, b.name) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  for (const [order, tag] of [['name', undefined], ['-name', undefined], ['name', 'x']] as const) {
    const expected = plants.filter((p) => p.name.toLowerCase().includes('fern') && (tag === undefined || p.tag === tag)).sort(byCodePoints);
    if (order === '-name') expected.reverse();
    const seen: bigint[] = [];
    let cursor: Pick<PlantQuery, 'after' | 'afterName'> = {};
    for (;;) {
      const page = await store.listPlantsJson({ limit: 4000, q: 'FERN', order, ...(tag && { tag }), ...cursor });
      seen.push(...[...page.json.matchAll(/"id":(-?\d+)/g)].map((m) => BigInt(m[1]!)));
      if (!page.more) break;
      cursor = { after: page.lastId!, afterName: page.lastName! };
    }
    assert.deepEqual(seen, expected.map((p) => p.id), `${order} ${tag ?? ''}`);
  }
});

test('listPlantsJson: names and tags that look like JSON items or SQL change neither the page, nor where it ends, nor its cursor', async (t) => {
  const store = await freshStore(t);
  const odd: PlantRecord[] = [
    { id: -5n, name: 'ends in ,{', tag: ',{' },
    { id: 1n, name: '{"id":2,"name":"x"}', tag: "x' OR '1'='1" },
    { id: 7n, name: '"},{"id":9}]', tag: '\\' },
    { id: 8n, name: 'plain' },
  ];
  for (const p of odd) assert.equal((await store.createPlant(p)).kind, 'created');
  const items = (json: string) => (JSON.parse(json) as { id: number }[]).map((p) => p.id);
  for (let limit = 1; limit <= odd.length; limit++) {
    const page = await store.listPlantsJson({ limit });
    assert.deepEqual(items(page.json), odd.slice(0, limit).map((p) => Number(p.id)), `limit ${limit}`);
    assert.deepEqual({ lastId: page.lastId, more: page.more }, { lastId: odd[limit - 1]!.id, more: limit < odd.length }, `limit ${limit}`);
  }
  // Values are bound, never written into the statement.
  for (const p of odd.slice(0, 3)) assert.deepEqual(await store.listPlants({ limit: 10, tag: p.tag! }), [p]);
  assert.deepEqual(items((await store.listPlantsJson({ limit: 1, tag: "x' OR '1'='1" })).json), [1]);
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

test('tokens: insert, findTokenByHash, list in creation order (ties in insertion order), revoke once (twice is false), touchTokens keeps the latest use', async (t) => {
  const store = await freshStore(t);
  const base = Date.UTC(2026, 0, 1);
  const token = (n: number, extra: Partial<TokenRecord> = {}): TokenRecord => ({
    id: `tok_${n}`,
    name: `token ${n}`,
    hash: String(n).repeat(64).slice(0, 64),
    scopes: ['plants:read', 'plants:write'],
    createdAt: new Date(base + n * 1_000),
    lastUsedAt: null,
    expiresAt: null,
    revokedAt: null,
    ...extra,
  });
  const later = token(3, { scopes: ['metrics:read'], expiresAt: new Date(base + 86_400_000) });
  // Inserted out of creation order.
  for (const tk of [later, token(1), token(2)]) await store.insertToken(tk);
  assert.equal(await store.countTokens(), 3);
  assert.deepEqual(await store.findTokenByHash(later.hash), later);
  assert.equal(await store.findTokenByHash('f'.repeat(64)), undefined);
  assert.deepEqual((await store.listTokens()).map((tk) => tk.id), ['tok_1', 'tok_2', 'tok_3']);

  const revokedAt = new Date(base + 5_000);
  assert.equal(await store.revokeToken('tok_2', revokedAt), true);
  assert.equal(await store.revokeToken('tok_2', new Date(base + 9_000)), false, 'revoked twice');
  assert.equal(await store.revokeToken('tok_none', revokedAt), false);
  assert.deepEqual((await store.findTokenByHash(token(2).hash))!.revokedAt, revokedAt);

  await store.touchTokens(new Map());
  await store.touchTokens(new Map([['tok_1', new Date(base + 7_000)], ['tok_3', new Date(base + 8_000)], ['tok_none', new Date(base)]]));
  // An older use reported late does not move last use back.
  await store.touchTokens(new Map([['tok_1', new Date(base + 6_000)]]));
  const listed = new Map((await store.listTokens()).map((tk) => [tk.id, tk]));
  assert.deepEqual(listed.get('tok_1')!.lastUsedAt, new Date(base + 7_000));
  assert.deepEqual(listed.get('tok_3')!.lastUsedAt, new Date(base + 8_000));
  assert.equal(listed.get('tok_2')!.lastUsedAt, null);
  assert.deepEqual(listed.get('tok_3'), { ...later, lastUsedAt: new Date(base + 8_000) });
  assert.equal(await store.countTokens(), 3);

  // Tokens made in the same millisecond list in the order they were made, on every engine.
  for (const n of [9, 8]) await store.insertToken({ ...token(n), createdAt: new Date(base + 60_000) });
  assert.deepEqual((await store.listTokens()).map((tk) => tk.id), ['tok_1', 'tok_2', 'tok_3', 'tok_9', 'tok_8']);

  // Pages in the same order, each after the id the last one ended with; one token by its id.
  const pages = [await store.tokensPage(2)];
  pages.push(await store.tokensPage(2, pages[0]!.at(-1)!.id));
  pages.push(await store.tokensPage(2, pages[1]!.at(-1)!.id));
  assert.deepEqual(pages.map((p) => p.map((tk) => tk.id)), [['tok_1', 'tok_2'], ['tok_3', 'tok_9'], ['tok_8']]);
  assert.deepEqual(pages[1]![0], { ...later, lastUsedAt: new Date(base + 8_000) });
  assert.deepEqual(await store.tokensPage(2, 'tok_8'), []);
  assert.deepEqual((await store.findTokenById('tok_2'))!.revokedAt, revokedAt);
  assert.equal(await store.findTokenById('tok_none'), undefined);
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
