// A batch crosses to the SQLite write worker as flat arrays (src/storage/sqlite/writer-wire.ts): everything a
// create and its outcome carry must come back out of structured clone exactly as it went in.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { CreateItem, ItemResult } from '../../src/storage/sqlite/create-batch.js';
import { decodeItems, encodeItems, type WireResults } from '../../src/storage/sqlite/writer-wire.js';

test('creates survive the trip to the writer: int64 ids, null tags, absent events, any text', () => {
  const items: CreateItem[] = [
    { id: 2n ** 63n - 1n, name: 'max', tag: null, event: undefined },
    { id: -(2n ** 63n), name: 'min', tag: 'x', event: { id: 'msg_a', type: 'newPlant', payload: '{"id":-9223372036854775808,"name":"min","tag":"x"}' } },
    { id: 0n, name: '', tag: '', event: { id: 'msg_b', type: 'newPlant', payload: '' } },
    { id: 9007199254740993n, name: 'café 🌵 \u0000 "q"', tag: null, event: { id: 'msg_c', type: 'newPlant', payload: '{}' } },
  ];
  const back = decodeItems(structuredClone(encodeItems(items)));
  assert.deepEqual(back, items);
  assert.equal(typeof back[3]!.id, 'bigint');
  assert.deepEqual(decodeItems(structuredClone(encodeItems([]))), []);
  // An event made on demand crosses as the event it makes.
  const made = { id: 'msg_d', type: 'newPlant', payload: '{"id":1,"name":"n"}' };
  assert.deepEqual(decodeItems(structuredClone(encodeItems([{ id: 1n, name: 'n', tag: null, event: () => made }]))), [{ id: 1n, name: 'n', tag: null, event: made }]);
});

test('what each create found survives the trip back: nothing (inserted), or the stored plant exactly', () => {
  const results: ItemResult[] = [
    null,
    { id: 2n ** 62n, name: 'stored', tag: null },
    { id: 2n ** 63n - 1n, name: 'café 🌵 \u0000', tag: 't' },
    null,
  ];
  const back: WireResults = structuredClone(results);
  assert.deepEqual(back, results);
  assert.equal(typeof back[2]!.id, 'bigint');
});
