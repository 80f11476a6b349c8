// int64 ids are exact on output too: every response that carries an id (list, read, the Link header) writes
// it as a bare JSON number with exactly the digits that were created, including ids a double cannot hold.
// Everything is checked on the raw response text; JSON.parse would round what is being tested.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startApp } from '../helpers/app.js';
import { INT64_MAX, INT64_MIN, call, createPlant, expectError, followPages, nextLink, sortIds } from './read-support.js';

// Pairs and triples of ids that share one double, around 2^53, 2^62 and both int64 ends.
const EDGES = [
  INT64_MIN,
  '-9223372036854775807',
  '-9223372036854775806',
  '-4611686018427387905',
  '-4611686018427387904',
  '-9007199254740993',
  '-9007199254740992',
  '-9007199254740991',
  '-1',
  '0',
  '1',
  '9007199254740991',
  '9007199254740992',
  '9007199254740993',
  '9007199254740995',
  '1234567890123456789',
  '4611686018427387903',
  '4611686018427387904',
  '4611686018427387905',
  '9223372036854775806',
  INT64_MAX,
];

/** Every "id": literal in a response text, in order; asserts they are bare numbers (never strings). */
function rawIds(text: string): string[] {
  assert.doesNotMatch(text, /"id"\s*:\s*"/, 'ids are numbers, not strings');
  assert.doesNotMatch(text, /"id"\s*:\s*-?\d+(\.|[eE])/, 'ids have no fraction or exponent');
  return [...text.matchAll(/"id":(-?\d+)/g)].map((m) => m[1]!);
}

test('int64 ids are exact in every response', async (t) => {
  const s = await startApp(t);
  // Created through the API in a shuffled order, each with its id in its name to catch any mix-up.
  const shuffled = [...EDGES].sort((a, b) => (a.length * 7 + a.charCodeAt(a.length - 1)) % 11 - (b.length * 7 + b.charCodeAt(b.length - 1)) % 11);
  for (const id of shuffled) await createPlant(s, { id, name: `plant ${id}` });
  const ordered = sortIds(EDGES);

  await t.test('GET /plants/{id}: the id and the name agree, digit for digit', async () => {
    for (const id of EDGES) {
      const res = await call(s, `/plants/${id}`);
      assert.equal(res.status, 200, id);
      const text = await res.text();
      assert.deepEqual(rawIds(text), [id], id);
      assert.match(text, new RegExp(`"name":"plant ${id}"`), id);
    }
  });

  await t.test('GET /plants: every id exact, in int64 order', async () => {
    const text = await (await call(s, '/plants?limit=1000')).text();
    assert.deepEqual(rawIds(text), ordered);
    for (const id of EDGES) assert.match(text, new RegExp(`"id":${id}[,}][^{}]*"name":"plant ${id}"|"name":"plant ${id}"[^{}]*"id":${id}[,}]`), id);
  });

  await t.test('GET /plants?limit=1: every Link carries the exact last id as after, and the walk sees every id once', async () => {
    const afters: string[] = [];
    const { plants } = await followPages(s, '/plants?limit=1', (page, link) => {
      if (link !== undefined) {
        const after = /[?&]after=(-?\d+)(&|$)/.exec(link);
        assert.ok(after, link);
        afters.push(after[1]!);
        assert.equal(after[1], page[0]!.id);
      }
    });
    assert.deepEqual(plants.map((p) => p.id), ordered);
    assert.deepEqual(afters, ordered.slice(0, -1));
  });

  await t.test('GET /plants?after=<edge>: strictly greater, even where after and an id share a double', async () => {
    for (const after of EDGES) {
      const res = await call(s, `/plants?after=${after}&limit=1000`);
      assert.deepEqual(rawIds(await res.text()), ordered.filter((id) => BigInt(id) > BigInt(after)), `after=${after}`);
    }
  });

  await t.test('GET /plants?limit=2 pages end exactly at the max, without Link', async () => {
    const res = await call(s, '/plants?limit=2&after=9223372036854775805');
    assert.deepEqual(rawIds(await res.text()), ['9223372036854775806', INT64_MAX]);
    assert.equal(nextLink(res.headers.get('link')), undefined);
  });

  await t.test('DELETE then GET of each edge touches exactly that id', async () => {
    let left = ordered;
    for (const id of [INT64_MAX, '9007199254740993', INT64_MIN, '-4611686018427387905']) {
      const res = await call(s, `/plants/${id}`, { method: 'DELETE', token: s.token.write });
      assert.equal(res.status, 204, id);
      left = left.filter((x) => x !== id);
      await expectError(await call(s, `/plants/${id}`), 404, id);
      assert.deepEqual(rawIds(await (await call(s, '/plants?limit=1000')).text()), left, `after deleting ${id}`);
    }
  });
});
