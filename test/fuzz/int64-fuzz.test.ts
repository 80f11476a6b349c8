// Property-based: an int64 id written as digits reaches the store exactly, in a body and in the path; written
// any other way (a zero fraction, an exponent, -0) it is 400 naming the member; an integer outside int64 and a
// fraction are 400 with the messages of the document's validation. Seeds and longer runs: see ./support.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { errorOf, startApp } from '../helpers/app.js';
import { check } from './support.js';

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const RANGE_MESSAGE = 'must be an integer from -9223372036854775808 to 9223372036854775807.';
const PLAIN_MESSAGE = 'must be written as a plain integer (digits only: no fraction, exponent or -0).';

/** Integers biased towards where doubles and int64 give out: 0, 2^53 and the ends. */
const near = (centre: bigint, spread: bigint) => fc.bigInt({ min: centre - spread, max: centre + spread });
const int64 = fc.oneof(
  fc.bigInt({ min: INT64_MIN, max: INT64_MAX }),
  near(0n, 1000n),
  near(2n ** 53n, 4n), near(-(2n ** 53n), 4n),
  near(INT64_MAX - 4n, 4n), near(INT64_MIN + 4n, 4n),
);
const beyond = fc.oneof(near(INT64_MAX + 5n, 4n), near(INT64_MIN - 5n, 4n), fc.bigInt({ min: 2n ** 63n, max: 2n ** 80n }), fc.bigInt({ min: -(2n ** 80n), max: INT64_MIN - 1n }));

/** Ways to write the integer n as a JSON number. */
function spell(n: bigint, how: number, zeros: number): string {
  const sign = n < 0n ? '-' : '';
  const digits = (n < 0n ? -n : n).toString();
  switch (how) {
    case 1:
      return `${n}.${'0'.repeat(zeros + 1)}`;
    case 2:
      // Zero takes no trailing zeros: 00e-1 is not JSON.
      return `${n}${n === 0n ? '' : '0'.repeat(zeros)}e-${zeros}`;
    case 3:
      // d.ddd...e+k with the point after the first digit
      return digits.length === 1 ? `${n}e0` : `${sign}${digits[0]}.${digits.slice(1)}E+${digits.length - 1}`;
    default:
      return n.toString();
  }
}
const spelling = fc.tuple(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 30 }));

test('fuzz: int64 ids are exact however written; others are rejected with the document\'s messages', { timeout: 600_000 }, async (t) => {
  const s = await startApp(t);
  const get = (id: string) => fetch(`${s.url}/plants/${id}`, { headers: { authorization: `Bearer ${s.token.read}` } });

  await t.test('an int64 written as digits is stored, located and read back as itself', async (t) => {
    await check(t, 150, fc.asyncProperty(int64, async (n) => {
      const literal = n.toString();
      const res = await s.postPlant(`{"id": ${literal}, "name": "fuzz"}`);
      const text = await res.text();
      assert.equal(res.status, 200, `${literal}: ${text}`);
      assert.equal(res.headers.get('location'), `/plants/${n}`, literal);
      const read = await get(n.toString());
      assert.equal(read.status, 200, literal);
      const body = await read.text();
      assert.deepEqual([...body.matchAll(/"id":(-?\d+)[,}]/g)].map((m) => m[1]), [n.toString()], `${literal}: ${body}`);
      assert.match(body, /"name":"fuzz"/, literal);
    }));
  });

  await t.test('an int64 written with a zero fraction, an exponent or as -0 is 400 naming the member, and stores nothing', async (t) => {
    const before = await s.store.countPlants();
    const other = fc.oneof(
      fc.tuple(int64, fc.integer({ min: 1, max: 3 }), fc.integer({ min: 0, max: 30 })).map(([n, how, zeros]) => spell(n, how, zeros)),
      fc.constantFrom('-0', '-0.0', '-0e0', '0.0', '0e5'),
    );
    await check(t, 150, fc.asyncProperty(other, async (literal) => {
      const res = await s.postPlant(`{"id": ${literal}, "name": "fuzz"}`);
      assert.equal(res.status, 400, literal);
      assert.equal((await errorOf(res)).message, `body/id ${PLAIN_MESSAGE}`, literal);
    }));
    assert.equal(await s.store.countPlants(), before);
  });

  await t.test('an integer beyond int64, in any spelling or in the path, is 400 and stores nothing', async (t) => {
    const before = await s.store.countPlants();
    await check(t, 200, fc.asyncProperty(beyond, spelling, async (n, [how, zeros]) => {
      const literal = spell(n, how, zeros);
      const res = await s.postPlant(`{"id": ${literal}, "name": "fuzz"}`);
      assert.equal(res.status, 400, literal);
      assert.equal((await errorOf(res)).message, `body/id ${RANGE_MESSAGE}`, literal);
      const read = await get(n.toString());
      assert.equal(read.status, 400, n.toString());
      assert.equal((await errorOf(read)).message, `params/id ${RANGE_MESSAGE}`, n.toString());
    }));
    assert.equal(await s.store.countPlants(), before);
  });

  await t.test('a fraction next to an int64 is 400 "must be an integer", however close to an integer', async (t) => {
    await check(t, 200, fc.asyncProperty(int64, fc.integer({ min: 1, max: 25 }), async (n, places) => {
      const literal = `${n}.${'0'.repeat(places - 1)}1`;
      const res = await s.postPlant(`{"id": ${literal}, "name": "fraction"}`);
      assert.equal(res.status, 400, literal);
      assert.equal((await errorOf(res)).message, 'body/id must be an integer.', literal);
    }));
  });
});
