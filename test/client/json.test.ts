// The client's lossless JSON (src/json/ through the client's exports): int64 paths become exact bigints,
// everything else is JSON.parse's answer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseJson, stringifyJson } from '@plant-store/client';

test('parseJson keeps int64 locations exact and agrees with JSON.parse elsewhere', () => {
  const text = '[{"name":"a\\"b\\u00e9","id":9223372036854775807,"n":9007199254740993},{"id":-9223372036854775808},{"id":1e3,"x":[1,2.5,true,null,{}]}]';
  assert.deepEqual(parseJson(text, ['/*/id']), [
    { name: 'a"bé', id: 9223372036854775807n, n: 9007199254740992 },
    { id: -9223372036854775808n },
    { id: 1000n, x: [1, 2.5, true, null, {}] },
  ]);
  assert.deepEqual(parseJson(text), JSON.parse(text));
  assert.deepEqual(parseJson(' {"id": 5.0} ', ['/id']), { id: 5n });
  assert.deepEqual(parseJson('{"id": 5.5}', ['/id']), { id: 5.5 });
  assert.equal(parseJson('9007199254740993', ['']), 9007199254740993n);
  const proto = parseJson('{"__proto__":{"polluted":1}}') as Record<string, unknown>;
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
  assert.deepEqual(Object.keys(proto), ['__proto__']);
  for (const bad of ['', '{', '[1,]', '{"a":1}x', '"abc', '01']) assert.throws(() => parseJson(bad), SyntaxError, bad);
});

test('stringifyJson writes bigints as exact JSON numbers and otherwise matches JSON.stringify', () => {
  assert.equal(stringifyJson({ id: 9223372036854775807n, name: 'x', tag: undefined }), '{"id":9223372036854775807,"name":"x"}');
  assert.equal(stringifyJson([-9007199254740993n, undefined, NaN]), '[-9007199254740993,null,null]');
  const sample = { a: [1, 'two', { b: null, c: false }], d: new Date(0), e: 'é"\n' };
  assert.equal(stringifyJson(sample), JSON.stringify(sample));
});

test('parseJson reads numbers a double misjudges as JSON.parse does, outside int64 paths and inside them', () => {
  const text = '{"f": 1.0000000000000000001, "big": 18446744073709551617, "neg": -1e400, "id": 9223372036854775808, "ok": 9007199254740993}';
  const plain = JSON.parse(text) as Record<string, unknown>;
  assert.deepEqual(parseJson(text), plain);
  // An int64 path holding what is not an int64 integer keeps JSON.parse's value; the others are exact.
  for (const [literal, expected] of [['1.0000000000000000001', 1], ['9223372036854775808', 9223372036854775808], ['1.5', 1.5], ['"7"', '7']] as const) {
    assert.deepEqual(parseJson(`{"id": ${literal}}`, ['/id']), { id: expected }, literal);
  }
  assert.deepEqual(parseJson(text, ['/ok']), { ...plain, ok: 9007199254740993n });
  assert.deepEqual(parseJson('[[1e18], [9.007199254740993e15]]', ['/*/*']), [[1000000000000000000n], [9007199254740993n]]);
});
