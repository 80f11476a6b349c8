// A batch crosses to the SQLite write worker as flat arrays (src/storage/writer-wire.ts): everything a
// write and its result carry must come back out of structured clone exactly as it went in.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { PlantWrite } from '../../src/plants/plant.js';
import { fieldTooLong, PLANT_FIELD_MAX_LENGTH } from '../../src/plants/plant.js';
import type { WriteOutcome } from '../../src/plants/plant-batch.js';
import { decodeItems, decodeOutcomes, encodeItems, encodeOutcomes, wroteAny } from '../../src/storage/writer-wire.js';

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

test('what each write did survives the trip back: its new version, the stored plant exactly, a too-long field with its rule, or nothing', () => {
  const outcomes: WriteOutcome[] = [
    { kind: 'created', version: 2n ** 63n - 1n },
    { kind: 'replayed', version: 4n },
    { kind: 'conflict', existing: { id: 2n ** 63n - 1n, name: 'café 🌵 \u0000', tag: 't', version: 5n } },
    { kind: 'changed', plant: { id: 9n, name: 'gone', version: 6n } },
    { kind: 'not-found' },
    { kind: 'changed', plant: { id: 11n, name: 'kept', tag: 'merged', version: 7n } },
    { kind: 'unchanged', plant: { id: -(2n ** 63n), name: '', tag: '', version: 1n } },
    { kind: 'version-mismatch', current: { id: 12n, name: 'newer', version: 8n } },
    { kind: 'too-long', ...fieldTooLong({ tag: 'x'.repeat(PLANT_FIELD_MAX_LENGTH.tag + 1) })! },
    { kind: 'too-long', ...fieldTooLong({ name: 'x'.repeat(PLANT_FIELD_MAX_LENGTH.name + 1) })! },
  ];
  const wire = structuredClone(encodeOutcomes(outcomes));
  assert.deepEqual(decodeOutcomes(wire), outcomes);
  assert.equal(wroteAny(wire), true);
  assert.equal(wroteAny(encodeOutcomes(outcomes.filter((o) => o.kind !== 'created' && o.kind !== 'changed'))), false);
  assert.deepEqual(decodeOutcomes(structuredClone(encodeOutcomes([]))), []);
});
