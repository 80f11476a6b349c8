// Unit tests of the int64-exact JSON parser (src/json/lossless-json.ts): parseJson and exactInteger, with the
// views JSON Schema validation sees ('schema', the default).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { malformedJson } from '../../src/http/json-parser.js';
import { exactInteger, parseJson } from '../../src/json/lossless-json.js';

const parseObject = (text: string) => parseJson(text) as Record<string, unknown>;
const exactId = (text: string) => exactInteger(parseObject(text), 'id');

test('parseJson agrees with JSON.parse on bodies without long numbers', () => {
  for (const text of ['{"id": 1, "name": "a"}', '[1, 2.5, -3, 1e2, "x", null, true, {}]', '"s"', '0', '-0.25', '{"a": {"b": [{"c": "123456789012345678"}]}}']) {
    assert.deepEqual(parseJson(text), JSON.parse(text), text);
  }
});

test('parseJson keeps non-number values identical on the lossless path', () => {
  const text = '{"s": "12345678901234567890", "e": "1e5", "n": null, "b": [true, false], "o": {"k": "v\\"q"}, "big": 12345678901234567890}';
  const value = parseObject(text);
  assert.deepEqual({ ...value, big: undefined }, { ...JSON.parse(text), big: undefined });
  assert.equal(typeof value.big, 'number');
});

test('exactInteger recovers every int64 exactly', () => {
  for (const digits of ['0', '1', '-1', '9007199254740991', '9007199254740992', '9007199254740993', '-9007199254740993',
    '9223372036854775806', '9223372036854775807', '-9223372036854775807', '-9223372036854775808', '1000000000000000000']) {
    assert.equal(exactId(`{"id": ${digits}}`), BigInt(digits), digits);
  }
});

test('exactInteger reads integer values written with fractions or exponents', () => {
  const cases: Array<[string, bigint]> = [
    ['5.0', 5n], ['1e3', 1000n], ['1E+3', 1000n], ['10e-1', 1n], ['-0', 0n], ['0.0e5', 0n], ['-7.00', -7n],
    ['9.223372036854775807e18', 9223372036854775807n], ['-9.223372036854775808e18', -9223372036854775808n],
    ['92233720368547758070e-1', 9223372036854775807n], ['9223372036854775807.0000000000', 9223372036854775807n],
    ['1234567890123456789000e-3', 1234567890123456789n],
  ];
  for (const [literal, expected] of cases) assert.equal(exactId(`{"id": ${literal}}`), expected, literal);
});

test('exactInteger is undefined for anything that is not an int64 integer', () => {
  for (const literal of ['1.5', '-0.5', '1.0000000000000000001', '9007199254740993.5', '999999999999999.99', '1000000000000.99999',
    '99999999999999.999', '9223372036854775808', '-9223372036854775809', '1e19', '1e400', '-1e400', '1e-400', '15e-1',
    '"1"', 'null', 'true', '[1]', '{"v": 1}']) {
    assert.equal(exactId(`{"id": ${literal}}`), undefined, literal);
  }
  assert.equal(exactInteger({}, 'id'), undefined);
});

test('the double view of a rejected literal cannot pass as an in-range integer', () => {
  for (const literal of ['9223372036854775808', '-9223372036854775809', '18446744073709551616', '1e19', '1e400', '-1e400']) {
    const v = parseObject(`{"id": ${literal}}`).id as number;
    assert.ok(!Number.isFinite(v) || Math.abs(v) > 2 ** 63, `${literal} viewed as ${v}`);
  }
  // Fractions that a double would round to an integer are not integers.
  for (const literal of ['1.0000000000000000001', '999999999999999.99', '1000000000000.99999', '9007199254740993.5']) {
    const v = parseObject(`{"id": ${literal}}`).id as number;
    assert.ok(!Number.isInteger(v), `${literal} viewed as ${v}`);
  }
});

test('exactIntegers are per object and per key', () => {
  const value = parseObject('{"id": 9007199254740993, "child": {"id": 9007199254740995}, "list": [9223372036854775807]}');
  assert.equal(exactInteger(value, 'id'), 9007199254740993n);
  assert.equal(exactInteger(value.child as object, 'id'), 9007199254740995n);
  assert.equal(exactInteger(value.list as object, '0'), 9223372036854775807n);
  assert.equal(exactInteger(value, 'child'), undefined);
  assert.equal(exactInteger(parseObject('{"id": 9007199254740993}'), 'other'), undefined);
});

test('a top-level long number parses to a number', () => {
  assert.equal(parseJson('1234567890123456789'), Number(1234567890123456789n));
  // Beyond int64 the view is pushed past 2^63, never rounded back into range.
  assert.ok((parseJson('9223372036854775808') as number) > 2 ** 63);
  assert.equal(parseJson('-1e400'), -Infinity);
});

test('parseJson rejects what JSON.parse rejects, on both paths', () => {
  for (const text of ['{"id": 01}', '{"id": 01234567890123456}', '{"id": -01234567890123456}', '{"id": 00e5}', '[+12345678901234567]',
    '[12345678901234567.]', '[.12345678901234567]', '{12345678901234567: 1}', '{"a": 12345678901234567 1}', '[1e5 12345678901234567]',
    '', ' ', '{', '[1,]', 'NaN', '{"a": Infinity}', '{"a": 1e}', '[0x12345678901234567]']) {
    assert.throws(() => JSON.parse(text), SyntaxError, `JSON.parse accepts ${text}`);
    assert.throws(() => parseJson(text), SyntaxError, text);
  }
});

test('a parse error on the lossless path reports the original text, never the internal marker', () => {
  for (const text of ['x12345678901234567', '[,12345678901234567]', '{"a": 12345678901234567 x}', '{12345678901234567: 1}', 'tru 12345678901234567']) {
    let expected = '';
    try {
      JSON.parse(text);
    } catch (err) {
      expected = (err as Error).message;
    }
    assert.throws(() => parseJson(text), (err: Error) => {
      assert.equal(err.message, expected, text);
      return true;
    });
    try {
      parseJson(text);
    } catch (err) {
      const message = malformedJson(err).message;
      assert.doesNotMatch(message, /\u0000|\\u0000/);
      assert.match(message, /^The request body is not valid JSON: /);
    }
  }
});

test('strings starting with NUL are never read as numbers', () => {
  for (const text of ['{"id": "\\u0000x:12345678901234567", "pad": 12345678901234567890}', '{"id": "\\u0000:1", "pad": 1e5}']) {
    const value = parseObject(text);
    assert.equal(typeof value.id, 'string');
    assert.equal(exactInteger(value, 'id'), undefined);
  }
});

test('deep nesting parses without overflowing the stack, on both paths', () => {
  const depth = 200_000;
  const plain = parseJson('['.repeat(depth) + ']'.repeat(depth));
  assert.ok(Array.isArray(plain));
  let holder = parseJson('['.repeat(depth) + '1234567890123456789' + ']'.repeat(depth)) as unknown[];
  for (let i = 1; i < depth; i++) holder = holder[0] as unknown[];
  assert.equal(exactInteger(holder, '0'), 1234567890123456789n);
});

test('prototype-pollution keys stay own data properties', () => {
  const value = parseObject('{"__proto__": {"polluted": 12345678901234567890}, "constructor": {"prototype": {"polluted": 1}}}');
  assert.equal(Object.getPrototypeOf(value), Object.prototype);
  assert.ok(Object.prototype.hasOwnProperty.call(value, '__proto__'));
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
  const proto = parseObject('{"__proto__": 12345678901234567890}');
  assert.equal(Object.getPrototypeOf(proto), Object.prototype);
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
});

test('long literals parse in linear time', () => {
  const zeros = '0'.repeat(400_000);
  for (const literal of [`1${zeros}1${zeros}1`, `1.${zeros}${zeros}1`, `1${zeros}${zeros}e-800000`, `-${'9'.repeat(800_000)}`]) {
    const started = performance.now();
    parseJson(`{"x": ${literal}}`);
    const ms = performance.now() - started;
    assert.ok(ms < 1_000, `${literal.slice(0, 20)}... took ${Math.round(ms)} ms`);
  }
  assert.equal(exactId(`{"id": 1${zeros}e-400000}`), 1n);
});
