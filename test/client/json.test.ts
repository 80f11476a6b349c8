// The client's lossless JSON: int64 locations become exact bigints, everything else is JSON.parse's answer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseJson, stringifyJson } from '../../src/client/json.js';

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
