// The Store port's promises about lists of plants, on the store under test (PLANT_STORE_TEST_STORE): getPlant
// and the list page in id order after a keyset, the tag filter, the page JSON with its cursor, q and the name
// orders (with the SQLite walk of the name index), and names and tags that look like JSON or SQL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { PlantQuery, PlantRecord } from '../../src/plants/plant.js';
import { WALK_AT_MATCHES } from '../../src/storage/sqlite/sqlite-plant-queries.js';
import { freshStore, unversioned } from '../helpers/contract-store.js';
import { ABOVE_2_53, MAX, MIN } from './store-contract-support.js';

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
