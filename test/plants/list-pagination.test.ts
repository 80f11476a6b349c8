// Keyset pagination of GET /plants over a few thousand rows: following Link rel="next" from the first page
// visits every plant exactly once, in id order; the last page has no Link (also when the count is a
// multiple of the limit); the Link keeps limit and tag; concurrent writes never duplicate or skip a row
// that exists throughout.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startApp } from '../helpers/app.js';
import { INT64_MAX, INT64_MIN, call, followPages, nextLink, pageOf, seed, sortIds, type PlantText } from './read-support.js';
import { eventually } from '../helpers/sleep.js';

// Characters that need encoding in a query and that would break a Link header if written raw.
const ODD_TAG = 'blau grün 🌿 &x=1+2% <a>; rel="x", y';

/** 3000 distinct ids spread over the whole int64 range (deterministic), both ends and 2^53 neighbours included. */
function spreadIds(count: number): string[] {
  const ids = new Set([INT64_MIN, INT64_MAX, '0', '-1', '1', '9007199254740992', '9007199254740993', '-9007199254740993']);
  let x = 0x2545f4914f6cdd1dn;
  const mask = (1n << 64n) - 1n;
  while (ids.size < count) {
    // xorshift64, read as a signed 64-bit integer; every few ids a small one, so neighbours are dense too.
    x ^= (x << 13n) & mask;
    x ^= x >> 7n;
    x ^= (x << 17n) & mask;
    const signed = BigInt.asIntN(64, x);
    ids.add(String(ids.size % 5 === 0 ? signed % 10_000n : signed));
  }
  return [...ids];
}

function tagOf(i: number): string | undefined {
  return i % 3 === 0 ? 'red' : i % 3 === 1 ? ODD_TAG : undefined;
}

test('following Link rel="next" over 3000 plants', async (t) => {
  const s = await startApp(t);
  const plants: PlantText[] = spreadIds(3000).map((id, i) => {
    const tag = tagOf(i);
    return { id, name: `plant ${i}`, ...(tag !== undefined && { tag }) };
  });
  await seed(s, plants);
  const all = sortIds(plants.map((p) => p.id));
  const byId = new Map(plants.map((p) => [p.id, p]));

  /** Follows the links from `first`, checking every Link on the way; returns ids and page count. */
  async function walk(first: string, limit: number, tag?: string) {
    const seen: string[] = [];
    const sizes: number[] = [];
    const { plants: got, pages } = await followPages(s, first, (page, link) => {
      sizes.push(page.length);
      if (link !== undefined) {
        assert.equal(page.length, limit, 'a page followed by another is full');
        const url = new URL(link, s.url);
        assert.equal(url.pathname, '/plants');
        assert.equal(url.searchParams.get('limit'), String(limit), 'the Link keeps limit');
        assert.equal(url.searchParams.get('after'), page.at(-1)!.id, 'after is the last id of the page, digit for digit');
        assert.equal(url.searchParams.get('tag'), tag ?? null, 'the Link keeps tag (and adds none)');
      }
      for (const p of page) {
        assert.deepEqual(p, byId.get(p.id), `plant ${p.id} as stored`);
        if (tag !== undefined) assert.equal(p.tag, tag);
      }
      seen.push(...page.map((p) => p.id));
    });
    assert.deepEqual(got.map((p) => p.id), seen);
    return { ids: seen, pages, sizes };
  }

  await t.test('default limit (20): 3000 is a multiple, 150 full pages, no Link on the last', async () => {
    const { ids, pages, sizes } = await walk('/plants', 20);
    assert.deepEqual(ids, all, 'every plant exactly once, in id order');
    assert.equal(pages, 150);
    assert.ok(sizes.every((n) => n === 20));
  });

  await t.test('limit=11: 273 pages, the last one short and without Link', async () => {
    const { ids, pages, sizes } = await walk('/plants?limit=11', 11);
    assert.deepEqual(ids, all);
    assert.equal(pages, 273);
    assert.equal(sizes.at(-1), 3000 - 272 * 11);
  });

  await t.test('limit=1000: three full pages, no Link on the third', async () => {
    const { ids, pages } = await walk('/plants?limit=1000', 1000);
    assert.deepEqual(ids, all);
    assert.equal(pages, 3);
  });

  await t.test('limit=999: four pages', async () => {
    const { ids, pages, sizes } = await walk('/plants?limit=999', 999);
    assert.deepEqual(ids, all);
    assert.deepEqual(sizes, [999, 999, 999, 3]);
    assert.equal(pages, 4);
  });

  await t.test('starting from an after in the middle visits exactly the rest', async () => {
    const from = all[1234]!;
    const { ids } = await walk(`/plants?limit=50&after=${from}`, 50);
    assert.deepEqual(ids, all.slice(1235));
  });

  for (const [tag, limit] of [['red', 13], [ODD_TAG, 100], ['red', 1000]] as const) {
    await t.test(`tag ${JSON.stringify(tag)} with limit ${limit}: every tagged plant once, the Link keeps tag and limit`, async () => {
      const expected = sortIds(plants.filter((p) => p.tag === tag).map((p) => p.id));
      assert.equal(expected.length, 1000);
      const { ids, pages } = await walk(`/plants?tag=${encodeURIComponent(tag)}&limit=${limit}`, limit, tag);
      assert.deepEqual(ids, expected);
      assert.equal(pages, Math.ceil(1000 / limit));
    });
  }

  await t.test('a tag with no plants: one empty page, no Link', async () => {
    const page = await pageOf(await call(s, '/plants?tag=blue&limit=5'));
    assert.deepEqual(page.plants, []);
    assert.equal(page.link, null);
  });
});

test('the last page has no Link when the count is an exact multiple of the limit (small counts)', async (t) => {
  const s = await startApp(t);
  await seed(s, ['1', '2', '3', '4', '5', '6'].map((id) => ({ id, name: id })));
  for (const [limit, expectedPages] of [[1, 6], [2, 3], [3, 2], [6, 1], [5, 2], [4, 2], [7, 1]] as const) {
    const { plants, pages } = await followPages(s, `/plants?limit=${limit}`);
    assert.deepEqual(plants.map((p) => p.id), ['1', '2', '3', '4', '5', '6'], `limit ${limit}`);
    assert.equal(pages, expectedPages, `limit ${limit}`);
  }
  const last = await pageOf(await call(s, '/plants?limit=3&after=3'));
  assert.deepEqual(last.plants.map((p) => p.id), ['4', '5', '6']);
  assert.equal(last.link, null);
});

test('writes between pages: rows ahead of the cursor show up, rows behind it never repeat', async (t) => {
  const s = await startApp(t);
  // Stable rows end in 0 and are never touched; doomed rows end in 5, and some are deleted ahead of the cursor.
  const stable = Array.from({ length: 2000 }, (_, i) => String(i * 10));
  const doomed = Array.from({ length: 500 }, (_, i) => String(i * 40 + 5));
  await seed(s, [...stable, ...doomed].map((id) => ({ id, name: `p${id}` })));
  const present = new Set([...stable, ...doomed]);
  const used = new Set(present);
  const insertedAhead: string[] = [];
  const insertedBehind: string[] = [];
  const deletedAhead: string[] = [];
  const write = { authorization: `Bearer ${s.token.all}` };
  /** The first id never used, from `start` in steps of `step`. */
  const freeId = (start: bigint, step: bigint) => {
    let id = start;
    while (used.has(String(id))) id += step;
    used.add(String(id));
    return String(id);
  };

  const { plants } = await followPages(s, '/plants?limit=50', async (page, link) => {
    if (link === undefined) return;
    const cursor = BigInt(page.at(-1)!.id);
    // Behind the cursor (inside the page just read): a new row the next pages must not show.
    const behind = freeId(cursor - 1n, -1n);
    assert.equal((await s.postPlant({ id: Number(behind), name: 'behind' })).status, 200);
    insertedBehind.push(behind);
    // Ahead of the cursor: a new row the next pages must show.
    const ahead = freeId(cursor + 1001n, 1n);
    assert.equal((await s.postPlant({ id: Number(ahead), name: 'ahead' })).status, 200);
    insertedAhead.push(ahead);
    // A doomed row ahead of the cursor, deleted before the pages reach it: it must not show.
    const victim = doomed.find((id) => BigInt(id) > cursor + 200n && present.has(id));
    if (victim !== undefined) {
      const res = await fetch(`${s.url}/plants/${victim}`, { method: 'DELETE', headers: write });
      assert.equal(res.status, 204);
      present.delete(victim);
      deletedAhead.push(victim);
    }
    // A doomed row already seen, deleted behind the cursor: no effect on the pages.
    const seenDoomed = doomed.find((id) => BigInt(id) < cursor && present.has(id));
    if (seenDoomed !== undefined) {
      assert.equal((await fetch(`${s.url}/plants/${seenDoomed}`, { method: 'DELETE', headers: write })).status, 204);
      present.delete(seenDoomed);
    }
  });
  assert.ok(insertedAhead.length > 40 && deletedAhead.length > 30, 'the test really wrote during pagination');
  const ids = plants.map((p) => p.id);
  const expected = sortIds([...stable, ...doomed.filter((id) => !deletedAhead.includes(id)), ...insertedAhead]);
  assert.deepEqual(ids, expected, 'each pre-existing row once, new rows ahead included, deleted ones ahead gone');
  for (const id of insertedBehind) assert.ok(!ids.includes(id), `row ${id} inserted behind the cursor is not shown`);
});

test('concurrent inserts and deletes during pagination: no duplicates, no skipped pre-existing rows', async (t) => {
  const s = await startApp(t);
  // Stable rows (multiples of 10, with the int64 ends) exist throughout; volatile rows are deleted, and
  // rows of their own created and deleted, by writers running at the same time as the readers.
  const stable = [INT64_MIN, ...Array.from({ length: 1500 }, (_, i) => String((i - 750) * 10)), INT64_MAX];
  const volatile = Array.from({ length: 400 }, (_, i) => String((i - 200) * 40 + 3));
  await seed(s, [...stable.map((id) => ({ id, name: `stable ${id}`, tag: 'keep' })), ...volatile.map((id) => ({ id, name: 'v', tag: 'keep' }))]);
  const write = { authorization: `Bearer ${s.token.all}` };
  const mod = (n: bigint, m: bigint) => ((n % m) + m) % m;
  // Stable ids are 0 mod 10, volatile ones 3 mod 40, the writers' own 7 mod 20: never the same id.
  const known = (n: bigint) => n === BigInt(INT64_MIN) || n === BigInt(INT64_MAX) || mod(n, 10n) === 0n || mod(n, 40n) === 3n || mod(n, 20n) === 7n;

  let done = false;
  let writes = 0;
  const writer = async (seedValue: number) => {
    let x = seedValue;
    while (!done) {
      x = (x * 1103515245 + 12345) % 2 ** 31;
      const n = (x % 800) - 400;
      const id = n * 20 + 7;
      const created = await s.postPlant({ id, name: 'new', tag: 'keep' });
      assert.equal(created.status, 200);
      const gone = volatile[x % volatile.length]!;
      const del = await fetch(`${s.url}/plants/${x % 2 === 0 ? gone : id}`, { method: 'DELETE', headers: write });
      assert.ok(del.status === 204 || del.status === 404, `delete: ${del.status}`);
      writes += 2;
    }
  };
  const reader = async (first: string) => {
    const { plants } = await followPages(s, first);
    return plants.map((p) => p.id);
  };

  const writers = Promise.all([1, 2, 3, 4].map((n) => writer(n * 7919)));
  let writerFailed = false;
  writers.catch(() => (writerFailed = true)); // awaited below; must not surface as an unhandled rejection first
  let reads: string[][];
  let during = 0;
  try {
    // Writers warmed up first, so the reads overlap a steady stream of commits.
    await eventually(() => writes >= 10 || writerFailed, 'the writers warming up', 10_000, 5);
    const before = writes;
    reads = await Promise.all([reader('/plants?limit=40'), reader('/plants?limit=97&tag=keep'), reader('/plants?limit=1000')]);
    during = writes - before;
  } finally {
    done = true;
    await writers;
  }
  assert.ok(during > 0, `writers committed while the reads ran (${during} writes)`);
  for (const ids of reads) {
    for (let i = 1; i < ids.length; i++) {
      assert.ok(BigInt(ids[i - 1]!) < BigInt(ids[i]!), `strictly ascending (no duplicate) at ${i}: ${ids[i - 1]} then ${ids[i]}`);
    }
    const seen = new Set(ids);
    const missing = stable.filter((id) => !seen.has(id));
    assert.deepEqual(missing, [], 'every row that existed throughout was visited');
    for (const id of ids) assert.ok(known(BigInt(id)), `only rows the test wrote: ${id}`);
  }
});

test('a Link is a relative reference that resolves against the request, with only limit, after and tag', async (t) => {
  const s = await startApp(t);
  await seed(s, ['1', '2', '3'].map((id) => ({ id, name: id, tag: 'x y' })));
  // (An unknown parameter is 400 before any Link is made: test/http/query-and-path.test.ts.)
  const res = await call(s, '/plants?limit=1&tag=x+y');
  const link = res.headers.get('link') ?? '';
  assert.match(link, /^<[^>]+>; rel="next"$/);
  const target = nextLink(link)!;
  assert.ok(target.startsWith('/plants?'), target);
  const url = new URL(target, s.url);
  assert.deepEqual([...url.searchParams.keys()].sort(), ['after', 'limit', 'tag']);
  assert.equal(url.searchParams.get('tag'), 'x y');
  assert.deepEqual((await pageOf(await call(s, target))).plants.map((p) => p.id), ['2']);
});
