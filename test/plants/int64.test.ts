// id is a JSON integer over the whole int64 range, kept exact from the request text to the stored row and
// the Location header. Every body here is raw JSON text: JSON.stringify of a JS number would already round.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { errorOf, startApp } from '../helpers/app.js';
import { locationId } from '../helpers/app.js';
import { storedPlant } from '../helpers/stored-plant.js';

const INT64_MAX = '9223372036854775807';
const INT64_MIN = '-9223372036854775808';

test('int64 ids at the edges are accepted and kept exact', async (t) => {
  const s = await startApp(t);
  const edges = [
    '9007199254740991', // 2^53 - 1
    '9007199254740992', // 2^53
    '9007199254740993', // 2^53 + 1: JSON.parse gives ...992
    '-9007199254740991',
    '-9007199254740992',
    '-9007199254740993',
    '1234567890123456789',
    '9223372036854775806',
    INT64_MAX,
    '-9223372036854775807',
    INT64_MIN,
  ];
  for (const id of edges) {
    await t.test(`id ${id}`, async () => {
      const res = await s.postPlant(`{"id": ${id}, "name": "p${id}"}`);
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), { name: `p${id}` });
      assert.equal(res.headers.get('location'), `/plants/${id}`);
      assert.deepEqual(await storedPlant(s.store, BigInt(id)), { id: BigInt(id), name: `p${id}` });
    });
  }
  await t.test('ids that round to the same double are distinct plants, none overwritten', async () => {
    assert.equal(await s.store.countPlants(), edges.length);
    for (const id of edges) assert.equal((await storedPlant(s.store, BigInt(id)))?.name, `p${id}`);
  });
});

test('two ids above 2^53 that share a double do not collide (no false replay or conflict)', async (t) => {
  const s = await startApp(t);
  for (const [a, b] of [['9007199254740992', '9007199254740993'], [INT64_MAX, '9223372036854775806'], [INT64_MIN, '-9223372036854775807']] as const) {
    assert.equal(Number(a), Number(b), 'the pair really shares a double');
    const first = await s.postPlant(`{"id": ${a}, "name": "first"}`);
    assert.equal(first.status, 200);
    // Same name: a lossy comparison would call this a replay. Different plant, so a new row.
    const same = await s.postPlant(`{"id": ${b}, "name": "first"}`);
    assert.equal(same.status, 200);
    assert.equal(locationId(same), b);
    // A different name under the other id: a lossy comparison would call this a conflict.
    const other = await s.postPlant(`{"id": ${b}, "name": "second"}`);
    assert.equal(other.status, 409, 'b now exists as "first"');
    await errorOf(other);
    assert.deepEqual(await storedPlant(s.store, BigInt(a)), { id: BigInt(a), name: 'first' });
    assert.deepEqual(await storedPlant(s.store, BigInt(b)), { id: BigInt(b), name: 'first' });
  }
  assert.equal(await s.store.countPlants(), 6);
});

test('an id written with a fraction, an exponent or as -0 is 400 naming the member, and stores nothing', async (t) => {
  const s = await startApp(t);
  // Each of these is an integer in JSON Schema's sense; the document asks for the plain digits, as in paths.
  const spellings = [
    '5.0', '1e3', '1E3', '2.5e1', '10e-1', '100.000', '-0', '0e10', '-7.0E+0', '1.2345678901234567e18',
    '90071992547409930e-1', '9.223372036854775807e18', '-9.223372036854775808E18', '9223372036854775807.000',
    '92233720368547758070e-1',
  ];
  for (const literal of spellings) {
    await t.test(`${literal} is 400`, async () => {
      const res = await s.postPlant(`{"id": ${literal}, "name": "same"}`);
      assert.equal(res.status, 400, `${literal}: ${res.status}`);
      assert.match((await errorOf(res)).message, /^body\/id must be written as a plain integer/);
    });
  }
  await t.test('nothing was stored, and the plain digits of the same id are accepted', async () => {
    assert.equal(await s.store.countPlants(), 0);
    const res = await s.postPlant(`{"id": ${INT64_MAX}, "name": "same"}`);
    assert.equal(res.status, 200);
    assert.equal(locationId(res), INT64_MAX);
  });
});

test('ids that are not int64 integers are 400 and store nothing', async (t) => {
  const s = await startApp(t);
  const rejected: Array<[string, string]> = [
    ['2^63 (one past the top)', '9223372036854775808'],
    ['-2^63 - 1 (one past the bottom)', '-9223372036854775809'],
    ['2^64', '18446744073709551616'],
    ['a 30-digit integer', '123456789012345678901234567890'],
    ['1e19', '1e19'],
    ['-1e19', '-1e19'],
    ['9.3e18', '9.3e18'],
    ['1e400 (overflows a double)', '1e400'],
    ['-1e400', '-1e400'],
    ['1e-400 (underflows to 0)', '1e-400'],
    ['a string "1"', '"1"'],
    ['a string of a big id', '"9007199254740993"'],
    ['an empty string', '""'],
    ['a fraction 1.5', '1.5'],
    ['-0.5', '-0.5'],
    ['a long fraction that a double rounds to 1', '1.0000000000000000001'],
    ['a fraction just above 2^53', '9007199254740993.5'],
    ['a fraction just below int64 max', '9223372036854775806.5'],
    ['a fraction that rounds to 1e15 without 16 digits in a row', '999999999999999.99'],
    ['a fraction that rounds to 1e12+1', '1000000000000.99999'],
    ['a negative exponent leaving a fraction', '15e-1'],
    ['null', 'null'],
    ['true', 'true'],
    ['false', 'false'],
    ['an array', '[1]'],
    ['an empty array', '[]'],
    ['an object', '{"value": 1}'],
    ['an object holding a big id', '{"id": 9007199254740993}'],
  ];
  for (const [label, literal] of rejected) {
    await t.test(`${label} -> 400`, async () => {
      const res = await s.postPlant(`{"id": ${literal}, "name": "x"}`);
      assert.equal(res.status, 400, literal);
      const err = await errorOf(res);
      assert.match(err.message, /id/);
    });
  }
  await t.test('nothing was stored, not even a rounded or clamped id', async () => {
    assert.equal(await s.store.countPlants(), 0);
  });
});

test('the exact id survives whatever else the body holds', async (t) => {
  const s = await startApp(t);

  await t.test('a small id in a body that also holds long numbers elsewhere (lossless path)', async () => {
    const res = await s.postPlant('{"big": 123456789012345678901234567890, "id": 7, "name": "small", "f": 1e999, "g": 1.00000000000000000001}');
    assert.equal(res.status, 200);
    assert.equal(locationId(res), '7');
    assert.deepEqual(await storedPlant(s.store, 7n), { id: 7n, name: 'small' });
  });

  await t.test('nested objects with their own big "id" do not leak into the top-level id', async () => {
    const res = await s.postPlant('{"child": {"id": 9007199254740995}, "id": 9007199254740993, "list": [{"id": 9223372036854775807}], "name": "nested"}');
    assert.equal(res.status, 200);
    assert.equal(locationId(res), '9007199254740993');
    assert.deepEqual(await storedPlant(s.store, 9007199254740993n), { id: 9007199254740993n, name: 'nested' });
    assert.equal(await storedPlant(s.store, 9007199254740995n), undefined);
    assert.equal(await storedPlant(s.store, 9223372036854775807n), undefined);
  });

  await t.test('a nested big id does not stand in for a missing top-level id', async () => {
    const res = await s.postPlant('{"child": {"id": 9007199254740995}, "name": "orphan"}');
    assert.equal(res.status, 400);
    assert.match((await errorOf(res)).message, /id/);
  });

  await t.test('a duplicated id key: the id validated is the id stored and the id in Location', async () => {
    const res = await s.postPlant('{"id": "not a number", "id": 9007199254740997, "name": "dup"}');
    if (res.status === 200) {
      assert.equal(locationId(res), '9007199254740997');
      assert.deepEqual(await storedPlant(s.store, 9007199254740997n), { id: 9007199254740997n, name: 'dup' });
    } else {
      assert.equal(res.status, 400);
      await errorOf(res);
    }
    const res2 = await s.postPlant('{"id": 9007199254740999, "id": 9007199254741001, "name": "dup2"}');
    if (res2.status === 200) {
      const id = locationId(res2);
      assert.ok(['9007199254740999', '9007199254741001'].includes(id));
      assert.deepEqual(await storedPlant(s.store, BigInt(id)), { id: BigInt(id), name: 'dup2' });
      const other = id === '9007199254740999' ? 9007199254741001n : 9007199254740999n;
      assert.equal(await storedPlant(s.store, other), undefined);
    } else {
      assert.equal(res2.status, 400);
      await errorOf(res2);
    }
  });

  await t.test('a string that imitates the internal number marker stays a string', async () => {
    // The lossless path smuggles long literals through JSON.parse as marked strings; a client's own
    // string starting with NUL must not be mistaken for one, on either path.
    for (const body of [
      '{"id": "\\u0000x:9007199254740993", "name": "forged"}',
      '{"id": "\\u0000x:9007199254740993", "name": "forged", "pad": 12345678901234567890}',
    ]) {
      const res = await s.postPlant(body);
      assert.equal(res.status, 400, body);
      await errorOf(res);
    }
    const name = '\u0000abc:12345678901234567890';
    const res = await s.postPlant(`{"id": 12, "name": ${JSON.stringify(name)}, "pad": 12345678901234567890}`);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { name });
    assert.deepEqual(await storedPlant(s.store, 12n), { id: 12n, name });
  });
});
