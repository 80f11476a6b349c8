// A batch crosses to the SQLite write worker as flat arrays (src/storage/writer-wire.ts): everything a
// write and its result carry must come back out of structured clone exactly as it went in.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { PlantWrite } from '../../src/plants/plant.js';
import { writeResultsOf, type BatchResults } from '../../src/storage/sqlite/plant-batch.js';
import { decodeItems, encodeItems } from '../../src/storage/writer-wire.js';

test('writes survive the trip to the writer: int64 ids and versions, absent tags, any text, what a patch sets, leaves and removes', () => {
  const items: PlantWrite[] = [
    { op: 'create', plant: { id: 2n ** 63n - 1n, name: 'max' } },
    { op: 'create', plant: { id: -(2n ** 63n), name: 'min', tag: 'x' } },
    { op: 'create', plant: { id: 0n, name: '', tag: '' } },
    { op: 'create', plant: { id: 9007199254740993n, name: 'café 🌵 \u0000 "q"' } },
    { op: 'replace', plant: { id: 5n, name: 'renamed', tag: 't' }, ifVersion: 2n ** 62n + 1n },
    { op: 'replace', plant: { id: 6n, name: 'untagged' }, ifVersion: undefined },
    { op: 'delete', id: -1n, ifVersion: 7n },
    { op: 'delete', id: 2n ** 63n - 1n, ifVersion: undefined },
    { op: 'patch', id: 11n, patch: { name: 'only the name' }, ifVersions: undefined },
    { op: 'patch', id: 12n, patch: { tag: 'only the tag' }, ifVersions: [2n ** 63n - 1n] },
    { op: 'patch', id: 13n, patch: { tag: null }, ifVersions: [1n, 2n] },
    { op: 'patch', id: -(2n ** 63n), patch: { name: '', tag: '' }, ifVersions: undefined },
    { op: 'patch', id: 14n, patch: {}, ifVersions: undefined },
  ];
  const back = decodeItems(structuredClone(encodeItems(items)));
  assert.deepEqual(back, items);
  assert.equal(typeof (back[3] as { plant: { id: unknown } }).plant.id, 'bigint');
  assert.deepEqual(decodeItems(structuredClone(encodeItems([]))), []);
});

test('what each write did and found survives the trip back: its new version, the stored plant exactly, or nothing', () => {
  const items: PlantWrite[] = [
    { op: 'create', plant: { id: 1n, name: 'new' } },
    { op: 'create', plant: { id: 2n ** 62n, name: 'again' } },
    { op: 'replace', plant: { id: 2n ** 63n - 1n, name: 'x' }, ifVersion: 3n },
    { op: 'delete', id: 9n, ifVersion: undefined },
    { op: 'delete', id: 10n, ifVersion: undefined },
    { op: 'patch', id: 11n, patch: { tag: 'merged' }, ifVersions: undefined },
    { op: 'patch', id: 12n, patch: { name: 'x' }, ifVersions: [1n] },
  ];
  const results: BatchResults = [
    true, 2n ** 63n - 1n,
    false, { id: 2n ** 62n, name: 'stored', tag: null, version: 4n },
    false, { id: 2n ** 63n - 1n, name: 'café 🌵 \u0000', tag: 't', version: 5n },
    true, { id: 9n, name: 'gone', tag: null, version: 6n },
    false, null,
    true, { id: 11n, name: 'kept', tag: 'merged', version: 7n },
    false, { id: 12n, name: 'newer', tag: null, version: 8n },
  ];
  assert.deepEqual(writeResultsOf(items, structuredClone(results)), [
    { wrote: true, row: { id: 1n, name: 'new', version: 2n ** 63n - 1n } },
    { wrote: false, row: { id: 2n ** 62n, name: 'stored', version: 4n } },
    { wrote: false, row: { id: 2n ** 63n - 1n, name: 'café 🌵 \u0000', tag: 't', version: 5n } },
    { wrote: true, row: { id: 9n, name: 'gone', version: 6n } },
    { wrote: false, row: undefined },
    { wrote: true, row: { id: 11n, name: 'kept', tag: 'merged', version: 7n } },
    { wrote: false, row: { id: 12n, name: 'newer', version: 8n } },
  ]);
});
