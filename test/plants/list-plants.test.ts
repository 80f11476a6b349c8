// GET /plants: a bare JSON array of {id, name, tag?} in id order; limit, after and tag; every bad query is a
// 400 Error; unknown parameters are ignored. Bodies are read losslessly (ids beyond 2^53 stay digits).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startApp } from '../helpers/app.js';
import {
  ABOVE_2_53, INT64_MAX, INT64_MIN, call, createPlant, expectError, listIds, nextLink, pageOf, plantOf, seed, sortIds, type PlantText,
} from './read-support.js';

test('GET /plants: shape and order', async (t) => {
  const s = await startApp(t);

  await t.test('an empty store is an empty array and no Link', async () => {
    const res = await call(s, '/plants');
    const { plants, link, text } = await pageOf(res);
    assert.deepEqual(plants, []);
    assert.equal(text, '[]');
    assert.equal(link, null);
  });

  const plants: PlantText[] = [
    { id: '5', name: 'five', tag: 'odd' },
    { id: INT64_MAX, name: 'max', tag: 'edge' },
    { id: '-1', name: 'minus one' },
    { id: '0', name: 'zero', tag: '' },
    { id: INT64_MIN, name: 'min', tag: 'edge' },
    { id: ABOVE_2_53, name: 'above 2^53' },
    { id: '9007199254740992', name: '2^53' },
    { id: '-9007199254740993', name: 'below -2^53', tag: 'big' },
    { id: '-42', name: 'ünïcødé 🌿 "quoted" \\ name 123', tag: 'grün 🌱' },
    { id: '9223372036854775806', name: 'max - 1' },
  ];
  // Through the API, in an order that is not the id order.
  for (const p of plants) await createPlant(s, p);
  const ordered = sortIds(plants.map((p) => p.id));

  await t.test('ordered by id ascending, negatives first, both int64 ends digit for digit', async () => {
    const { plants: got, link, text } = await pageOf(await call(s, '/plants'));
    assert.deepEqual(got.map((p) => p.id), ordered);
    assert.deepEqual(ordered.slice(0, 2), [INT64_MIN, '-9007199254740993']);
    assert.equal(ordered.at(-1), INT64_MAX);
    assert.equal(link, null, 'all fit in the default page');
    // The raw text holds each id as a bare JSON number, exactly.
    assert.deepEqual([...text.matchAll(/"id":(-?\d+)[,}]/g)].map((m) => m[1]), ordered);
    assert.doesNotMatch(text, /"id":"/);
  });

  await t.test('items are exactly {id, name, tag?}: tag absent when not set, "" kept as ""', async () => {
    const { plants: got } = await pageOf(await call(s, '/plants'));
    const byId = new Map(got.map((p) => [p.id, p]));
    for (const p of plants) assert.deepEqual(byId.get(p.id), p, `plant ${p.id}`);
    assert.equal('tag' in byId.get('-1')!, false);
    assert.equal(byId.get('0')!.tag, '');
  });

  await t.test('a write-only token is 403 insufficient_scope naming plants:read; no token is 401', async () => {
    const forbidden = await call(s, '/plants', { token: s.token.write });
    assert.match(forbidden.headers.get('www-authenticate') ?? '', /error="insufficient_scope"/);
    assert.match(forbidden.headers.get('www-authenticate') ?? '', /scope="plants:read"/);
    await expectError(forbidden, 403);
    const none = await call(s, '/plants', { token: null });
    assert.equal(none.headers.get('www-authenticate'), 'Bearer realm="plant-store"');
    await expectError(none, 401);
    // Authentication comes first, even for a query that would be a 400.
    await expectError(await call(s, '/plants?limit=abc', { token: null }), 401);
    assert.equal((await call(s, '/plants', { token: s.token.all })).status, 200);
  });

  await t.test('other methods on /plants are 405 with Allow', async () => {
    for (const method of ['PUT', 'DELETE', 'PATCH']) {
      const res = await call(s, '/plants', { method, token: s.token.all });
      assert.equal(res.headers.get('allow'), 'GET, HEAD, POST', method);
      await expectError(res, 405, method);
    }
    assert.deepEqual(await listIds(s), ordered, 'nothing changed');
  });
});

test('GET /plants: every character a name or tag may hold reads back as GET /plants/{id} reads it', async (t) => {
  // The list is written by the store (SQLite builds its JSON itself); GET by id goes through the contract's
  // serializer. Both must say the same thing, escapes included.
  const s = await startApp(t);
  const controls = Array.from({ length: 32 }, (_, c) => String.fromCharCode(c)).join('');
  const plants: PlantText[] = [
    { id: '1', name: controls.slice(0, 16), tag: controls.slice(16) },
    { id: '2', name: 'quote " backslash \\ slash / solidus', tag: '\u007f del' },
    { id: '3', name: 'line\u2028para\u2029end', tag: '\ud83c\udf3f 🌿 ß' },
    { id: '4', name: '{"id":99,"name":"x"}', tag: ',{"id":' },
    { id: '5', name: 'x'.repeat(64) },
    { id: INT64_MAX, name: 'null', tag: 'null' },
  ];
  for (const p of plants) await createPlant(s, p);

  const listed = await call(s, '/plants');
  const listType = listed.headers.get('content-type');
  const { plants: got } = await pageOf(listed);
  assert.deepEqual(got, plants);
  for (const p of plants) {
    const one = await call(s, `/plants/${p.id}`);
    assert.equal(one.headers.get('content-type'), listType, 'the same media type as GET by id');
    assert.deepEqual(await plantOf(one), p);
  }
});

test('GET /plants: limit', async (t) => {
  const s = await startApp(t);
  const ids = Array.from({ length: 1001 }, (_, i) => String(i + 1));
  await seed(s, ids.map((id) => ({ id, name: `p${id}` })));

  await t.test('default limit is 20, with a next link', async () => {
    const { plants, link } = await pageOf(await call(s, '/plants'));
    assert.deepEqual(plants.map((p) => p.id), ids.slice(0, 20));
    const next = new URL(nextLink(link)!, s.url);
    assert.equal(next.pathname, '/plants');
    assert.equal(next.searchParams.get('limit'), '20');
    assert.equal(next.searchParams.get('after'), '20');
  });

  await t.test('limit=1', async () => {
    const { plants, link } = await pageOf(await call(s, '/plants?limit=1'));
    assert.deepEqual(plants, [{ id: '1', name: 'p1' }]);
    assert.equal(new URL(nextLink(link)!, s.url).searchParams.get('after'), '1');
  });

  await t.test('limit=1000 (the maximum): 1000 plants and a link; the rest is the 1001st, without a link', async () => {
    const first = await pageOf(await call(s, '/plants?limit=1000'));
    assert.deepEqual(first.plants.map((p) => p.id), ids.slice(0, 1000));
    const next = nextLink(first.link);
    assert.ok(next);
    const second = await pageOf(await call(s, next));
    assert.deepEqual(second.plants.map((p) => p.id), ['1001']);
    assert.equal(second.link, null);
  });

  await t.test('exactly limit plants left: a full page and no link', async () => {
    const page = await pageOf(await call(s, '/plants?limit=1000&after=1'));
    assert.equal(page.plants.length, 1000);
    assert.equal(page.plants.at(-1)!.id, '1001');
    assert.equal(page.link, null);
  });

  const bad = ['0', '-1', '1001', '1.5', 'abc', '', '1e2', '01', '+1', ' 1', '1 ', '1000.0', '10.0', '0x10', '2147483648', '-2147483649',
    '99999999999999999999999999', 'Infinity', 'NaN', 'true', 'null', '[1]', '"5"', '٥', '５'];
  for (const value of bad) {
    await t.test(`limit=${JSON.stringify(value)} is 400`, async () => {
      await expectError(await call(s, `/plants?limit=${encodeURIComponent(value)}`), 400, value);
    });
  }

  await t.test('a repeated limit is 400, even with equal values', async () => {
    await expectError(await call(s, '/plants?limit=1&limit=2'), 400);
    await expectError(await call(s, '/plants?limit=5&limit=5'), 400);
  });

  await t.test('a bad limit is 400 whatever the other parameters', async () => {
    await expectError(await call(s, '/plants?after=3&tag=x&limit=0'), 400);
    await expectError(await call(s, '/plants?limit=1001&after=3'), 400);
  });
});

test('GET /plants: after', async (t) => {
  const s = await startApp(t);
  const ids = [INT64_MIN, '-9223372036854775807', '-9007199254740993', '-9007199254740992', '-1', '0', '1', '2', '9007199254740992',
    ABOVE_2_53, '9007199254740994', '9223372036854775806', INT64_MAX];
  await seed(s, ids.map((id) => ({ id, name: `p${id}` })));
  const greater = (after: string) => ids.filter((id) => BigInt(id) > BigInt(after));

  await t.test('returns only ids strictly greater, exact beyond 2^53', async () => {
    for (const after of [...ids, '-5', '3', '100', '9007199254740995', '-9223372036854775000']) {
      assert.deepEqual(await listIds(s, `?after=${after}`), greater(after), `after=${after}`);
    }
  });

  await t.test('int64 edges: after=min excludes only min, after=max is empty without a link', async () => {
    assert.deepEqual(await listIds(s, `?after=${INT64_MIN}`), ids.slice(1));
    const last = await pageOf(await call(s, `/plants?after=${INT64_MAX}`));
    assert.deepEqual(last.plants, []);
    assert.equal(last.link, null);
    // 9223372036854775806 and the max share a double (2^63): only the max follows.
    assert.deepEqual(await listIds(s, '?after=9223372036854775806'), [INT64_MAX]);
    // 2^53+1 rounds to 2^53 as a double; an after read as a double would return 2^53+1 again.
    assert.deepEqual(await listIds(s, `?after=${ABOVE_2_53}`), ['9007199254740994', '9223372036854775806', INT64_MAX]);
    assert.deepEqual(await listIds(s, '?after=-9007199254740993'), greater('-9007199254740993'));
  });

  await t.test('after with limit and with tag', async () => {
    assert.deepEqual(await listIds(s, '?after=-1&limit=2'), ['0', '1']);
    assert.deepEqual(await listIds(s, '?limit=2&after=-1'), ['0', '1']);
    assert.deepEqual(await listIds(s, '?after=-1&tag=none'), []);
  });

  const bad = ['9223372036854775808', '-9223372036854775809', '18446744073709551616', '99999999999999999999', '9'.repeat(500),
    '1.5', '1.0', 'abc', '', '1e3', '01', '-01', '00', '+1', ' 1', '0x10', '-', '--1', '1-', '1,2', 'Infinity', 'NaN', 'null'];
  for (const value of bad) {
    await t.test(`after=${JSON.stringify(value.length > 40 ? `${value.slice(0, 10)}... (${value.length} digits)` : value)} is 400`, async () => {
      await expectError(await call(s, `/plants?after=${encodeURIComponent(value)}`), 400, value);
    });
  }

  await t.test('a repeated after is 400', async () => {
    await expectError(await call(s, '/plants?after=1&after=2'), 400);
  });
});

test('GET /plants: tag is an exact match', async (t) => {
  const s = await startApp(t);
  const plants: PlantText[] = [
    { id: '1', name: 'a', tag: 'Green' },
    { id: '2', name: 'b', tag: 'green' },
    { id: '3', name: 'c', tag: 'green ' },
    { id: '4', name: 'd', tag: 'greenery' },
    { id: '5', name: 'e', tag: 'gre' },
    { id: '6', name: 'f', tag: '' },
    { id: '7', name: 'g' },
    { id: '8', name: 'h', tag: '🌿 grün' },
    { id: '9', name: 'i', tag: 'a+b' },
    { id: '10', name: 'j', tag: 'a b' },
    { id: '11', name: 'k', tag: 'a&b=c' },
    { id: '12', name: 'l', tag: '100%' },
    { id: '13', name: 'm', tag: 'green' },
    { id: '14', name: 'n', tag: 'e\u0301' }, // e + combining acute
    { id: '15', name: 'o', tag: '\u00e9' }, // precomposed é
    { id: '16', name: 'p', tag: 'GREEN' },
    { id: '17', name: 'q', tag: 'gre_n' },
    { id: INT64_MAX, name: 'r', tag: 'green' },
    { id: INT64_MIN, name: 's', tag: 'green' },
  ];
  for (const p of plants) await createPlant(s, p);
  const withTag = (tag: string) => sortIds(plants.filter((p) => p.tag === tag).map((p) => p.id));

  await t.test('each tag returns exactly its plants, in id order, with their tag', async () => {
    for (const tag of new Set(plants.flatMap((p) => (p.tag === undefined ? [] : [p.tag])))) {
      const { plants: got } = await pageOf(await call(s, `/plants?tag=${encodeURIComponent(tag)}`));
      assert.deepEqual(got.map((p) => p.id), withTag(tag), `tag ${JSON.stringify(tag)}`);
      assert.ok(got.every((p) => p.tag === tag));
    }
    assert.deepEqual(withTag('green'), [INT64_MIN, '2', '13', INT64_MAX]);
  });

  await t.test('case-sensitive, no prefix, suffix, trimming, wildcard or normalization matching', async () => {
    for (const tag of ['GrEeN', 'gree', 'reen', 'green  ', ' green', 'g%', '%', '_', 'gre%', 'gre*', '*', 'a', 'b', '100', 'e', '\u00c9', 'x']) {
      assert.deepEqual(await listIds(s, `?tag=${encodeURIComponent(tag)}`), withTag(tag), `tag ${JSON.stringify(tag)}`);
    }
    assert.deepEqual(await listIds(s, `?tag=${encodeURIComponent('e\u0301')}`), ['14']);
    assert.deepEqual(await listIds(s, `?tag=${encodeURIComponent('\u00e9')}`), ['15']);
    assert.deepEqual(await listIds(s, '?tag=gre_n'), ['17']);
    assert.deepEqual(await listIds(s, '?tag=gre'), ['5']);
  });

  await t.test('tag= (empty) matches only the empty tag, never plants without a tag', async () => {
    const { plants: got } = await pageOf(await call(s, '/plants?tag='));
    assert.deepEqual(got, [{ id: '6', name: 'f', tag: '' }]);
  });

  await t.test('no tag parameter lists every plant, with and without tags', async () => {
    assert.deepEqual(await listIds(s), sortIds(plants.map((p) => p.id)));
  });

  await t.test('query encoding: + is a space, %2B a plus, & and = inside a value are data', async () => {
    assert.deepEqual(await listIds(s, '?tag=a+b'), ['10']);
    assert.deepEqual(await listIds(s, '?tag=a%20b'), ['10']);
    assert.deepEqual(await listIds(s, '?tag=a%2Bb'), ['9']);
    assert.deepEqual(await listIds(s, '?tag=a%26b%3Dc'), ['11']);
    assert.deepEqual(await listIds(s, '?tag=100%25'), ['12']);
    assert.deepEqual(await listIds(s, `?tag=${encodeURIComponent('🌿 grün')}`), ['8']);
  });

  await t.test('tag combines with limit and after', async () => {
    const first = await pageOf(await call(s, '/plants?tag=green&limit=2'));
    assert.deepEqual(first.plants.map((p) => p.id), [INT64_MIN, '2']);
    const next = new URL(nextLink(first.link)!, s.url);
    assert.equal(next.searchParams.get('tag'), 'green');
    assert.equal(next.searchParams.get('limit'), '2');
    assert.equal(next.searchParams.get('after'), '2');
    assert.deepEqual(await listIds(s, '?tag=green&after=2'), ['13', INT64_MAX]);
    assert.deepEqual(await listIds(s, `?tag=green&after=${INT64_MAX}`), []);
  });

  await t.test('a repeated tag is 400', async () => {
    await expectError(await call(s, '/plants?tag=green&tag=Green'), 400);
  });
});

