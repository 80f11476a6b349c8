// The parse work a body can cause is bounded: number literals that need the exact path (an exponent, 16+
// digits, a zero fraction or -0) cost twenty times a plain one, so a body may hold at most MAX_EXACT_NUMBERS of them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { errorOf, startApp } from '../helpers/app.js';
import { MAX_EXACT_NUMBERS } from '../../src/http/json-parser.js';
import { storedPlant } from '../helpers/stored-plant.js';

test('a body of exponent literals past the bound is a clear 400, cheaply; up to the bound the body is parsed', async (t) => {
  const s = await startApp(t);
  // A mebibyte of `1e1`: answered at once, and nothing stored.
  const flood = `{"id":1,"name":"flood","x":[${Array(262_000).fill('1e1').join(',')}]}`;
  const started = performance.now();
  const res = await s.postPlant(flood);
  const ms = performance.now() - started;
  assert.equal(res.status, 400);
  const body = await errorOf(res);
  assert.equal(body.message, `The request body holds more than ${MAX_EXACT_NUMBERS} number literals with an exponent, a zero fraction, 16 or more digits, or -0; at most ${MAX_EXACT_NUMBERS} are accepted.`);
  assert.equal(await storedPlant(s.store, 1n), undefined);
  t.diagnostic(`1 MiB of 1e1 answered in ${ms.toFixed(1)} ms`);

  // Exactly at the bound, with the id among them: parsed, and the id exact.
  const atBound = `{"id":9007199254740993,"name":"at the bound","x":[${Array(MAX_EXACT_NUMBERS - 1).fill('1e1').join(',')}]}`;
  const ok = await s.postPlant(atBound);
  assert.equal(ok.status, 200, await ok.clone().text());
  assert.deepEqual(await storedPlant(s.store, 9007199254740993n), { id: 9007199254740993n, name: 'at the bound' });
  // One more is refused.
  const past = await s.postPlant(`{"id":2,"name":"past","x":[${Array(MAX_EXACT_NUMBERS + 1).fill('1e1').join(',')}]}`);
  assert.equal(past.status, 400);
  // Plain short numbers are not counted.
  const plain = await s.postPlant(`{"id":3,"name":"plain","x":[${Array(10_000).fill('12').join(',')}]}`);
  assert.equal(plain.status, 200);
  // Zero fractions and -0 take the exact path (to tell them from integers), so they count.
  const zeros = await s.postPlant(`{"id":4,"name":"zeros","x":[${Array(MAX_EXACT_NUMBERS + 1).fill('5.0').join(',')}]}`);
  assert.equal(zeros.status, 400);
  const negativeZeros = await s.postPlant(`{"id":4,"name":"zeros","x":[${Array(MAX_EXACT_NUMBERS + 1).fill('-0').join(',')}]}`);
  assert.equal(negativeZeros.status, 400);
  const fractions = await s.postPlant(`{"id":4,"name":"fractions","x":[${Array(10_000).fill('1.5').join(',')}]}`);
  assert.equal(fractions.status, 200);
});
