// Unit tests of the int64 paths of a schema (src/json/int64-paths.ts) and of the decoder that turns the values
// there into exact bigints (src/json/int64-decoder.ts), over text parsed by parseJson and over parameters.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { int64Decoder } from '../../src/json/int64-decoder.js';
import { int64Paths } from '../../src/json/int64-paths.js';
import { parseJsonRoot, readDecimalInteger } from '../../src/json/lossless-json.js';

const int64 = { type: 'integer', format: 'int64' };

test('int64Paths finds int64 values through properties, items, allOf/anyOf/oneOf and references, not round a cycle', () => {
  assert.deepEqual(int64Paths(int64), ['']);
  assert.deepEqual(int64Paths({ type: ['integer', 'null'], format: 'int64' }), ['']);
  assert.deepEqual(int64Paths({ type: 'integer', format: 'int32' }), []);
  assert.deepEqual(int64Paths({ type: 'string', format: 'int64' }), []);
  const schema = {
    type: 'object',
    properties: {
      id: int64,
      'a/b~c': int64,
      list: { type: 'array', items: { allOf: [{ properties: { n: int64 } }, { anyOf: [{ properties: { m: int64 } }] }] } },
      ref: { $ref: '#/node' },
      small: { type: 'integer' },
    },
  };
  const node = { type: 'object', properties: { deep: int64, self: { $ref: '#/node' } } };
  assert.deepEqual(int64Paths(schema, (ref) => (ref === '#/node' ? node : assert.fail(ref))), ['/a~1b~0c', '/id', '/list/*/m', '/list/*/n', '/ref/deep']);
  assert.throws(() => int64Paths({ $ref: '#/x' }), /no resolver/);
});

/** Parses text and decodes it at paths, as the server does after validation and the client on responses. */
function decoded(text: string, paths: string[]): unknown {
  const root = parseJsonRoot(text);
  int64Decoder(paths)?.(root, 'value');
  return root.value;
}

test('the decoder turns exactly the values at its paths into exact bigints', () => {
  const text = '{"id": 9223372036854775807, "n": 9007199254740993, "child": {"id": 5}, "list": [{"id": -9223372036854775808}, {"id": 7}, {}, 3, null], "a/b~c": 1e3}';
  assert.deepEqual(decoded(text, ['/id', '/list/*/id', '/a~1b~0c']), {
    id: 9223372036854775807n,
    n: 9007199254740992,
    child: { id: 5 },
    list: [{ id: -9223372036854775808n }, { id: 7n }, {}, 3, null],
    'a/b~c': 1000n,
  });
  assert.equal(decoded('9007199254740993', ['']), 9007199254740993n);
  assert.deepEqual(decoded('[1, 12345678901234567, "2"]', ['/*']), [1n, 12345678901234567n, '2']);
  assert.equal(int64Decoder([]), undefined);
});

test('the decoder leaves alone what is not an int64 integer and never reads inherited properties', () => {
  const text = '{"a": 1.5, "b": "1", "c": null, "d": 9223372036854775808, "e": 1.0000000000000000001, "f": [1], "g": {"x": 1}, "h": true}';
  const paths = ['/a', '/b', '/c', '/d', '/e', '/f', '/g', '/h'];
  const value = decoded(text, paths) as Record<string, unknown>;
  assert.deepEqual(Object.values(value).map((v) => typeof v), ['number', 'string', 'object', 'number', 'number', 'object', 'object', 'boolean']);
  assert.deepEqual(value.f, [1]);
  const inherited = Object.create({ id: 5 }) as Record<string, unknown>;
  int64Decoder(['/id'])!({ value: inherited }, 'value');
  assert.equal(Object.hasOwn(inherited, 'id'), false);
  // A "__proto__" key is JSON.parse's own data property; decoding it sets nothing on a prototype.
  const proto = decoded('{"__proto__": {"id": 12345678901234567}}', ['/__proto__/id']) as Record<string, { id?: unknown }>;
  assert.equal(Object.getPrototypeOf(proto), Object.prototype);
  assert.equal(Object.getOwnPropertyDescriptor(proto, '__proto__')?.value.id, 12345678901234567n);
  assert.equal(({} as { id?: unknown }).id, undefined);
});

test('readDecimalInteger gives parameters the views and exact values of body integers', () => {
  const params: Record<string, unknown> = {
    small: '42', neg: '-7', safe: '9007199254740991', above: '9007199254740993', max: '9223372036854775807', min: '-9223372036854775808',
    over: '9223372036854775808', under: '-9223372036854775809', frac: '1.5', lead: '01', word: 'abc', empty: '', long: '1'.repeat(41),
  };
  for (const key of Object.keys(params)) readDecimalInteger(params, key);
  assert.deepEqual(
    { small: params.small, neg: params.neg, safe: params.safe, frac: params.frac, lead: params.lead, word: params.word, empty: params.empty, long: params.long },
    { small: 42, neg: -7, safe: 9007199254740991, frac: '1.5', lead: '01', word: 'abc', empty: '', long: '1'.repeat(41) },
  );
  // Beyond int64 the view lies beyond +-2^64, so `format: int64` rejects it.
  assert.ok((params.over as number) > 2 ** 63 && (params.under as number) < -(2 ** 63));
  const decode = int64Decoder(['/above', '/max', '/min', '/safe', '/small', '/over'])!;
  decode({ value: params }, 'value');
  assert.deepEqual(
    [params.above, params.max, params.min, params.safe, params.small, typeof params.over],
    [9007199254740993n, 9223372036854775807n, -9223372036854775808n, 9007199254740991n, 42n, 'number'],
  );
});
