// Finding plants (GET /plants: q, sort, Prefer: count=exact) against an in-memory model: random names (mixed
// case, non-ASCII, %, _, quotes, backslashes), random queries in every order walked to the end through their
// Links and compared with the model's filter and order; walks in every order under concurrent creates, renames
// and deletes; the 400s.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startApp, type TestApp } from '../helpers/app.js';
import { INT64_MAX, INT64_MIN, call, expectError, nextLink, pageOf, seed, type PlantText } from './read-support.js';

const ORDERS = ['id', '-id', 'name', '-name'] as const;
type Order = (typeof ORDERS)[number];

// Pieces of names: cases and forms that fold together (É/é/e/e + U+0301, ß/ẞ/SS/ss, Σ/σ/ς, ﬁ/fi, full-width Ｆ/F),
// LIKE's and SQL's special characters, and characters on both sides of the UTF-16 surrogate range (code point
// order differs from UTF-16 order there).
const PIECES = ['a', 'A', 'b', 'É', 'é', 'e', 'e\u0301', 'ß', 'ẞ', 'SS', 'ss', 'Σ', 'σ', 'ς', 'ﬁ', 'fi', 'Ｆ', '%', '_', "'", '"', '\\', ' ', 'z', 'Z', '🌿', '\uff5e', 'fern', 'FERN', 'Émile'];

/**
 * The documented folding, written out again here: NFKD, combining marks removed, upper then lower case, and the
 * lower-case results that Unicode case folding maps further (ß to ss, final ς to σ).
 */
const fold = (s: string) =>
  s.normalize('NFKD').replace(/\p{M}/gu, '').toUpperCase().toLowerCase().replaceAll('ß', 'ss').replaceAll('ς', 'σ');

/** Texts by Unicode code points (UTF-8 byte order is the same). */
const byCodePoints = (x: string, y: string) => Buffer.compare(Buffer.from(x), Buffer.from(y));

/** Names as a person reads them: by the folded name, then the name, then the id. */
function compare(order: Order, a: PlantText, b: PlantText): number {
  const byId = (x: PlantText, y: PlantText) => (BigInt(x.id) < BigInt(y.id) ? -1 : BigInt(x.id) > BigInt(y.id) ? 1 : 0);
  const byName = (x: PlantText, y: PlantText) => byCodePoints(fold(x.name), fold(y.name)) || byCodePoints(x.name, y.name) || byId(x, y);
  switch (order) {
    case 'id':
      return byId(a, b);
    case '-id':
      return byId(b, a);
    case 'name':
      return byName(a, b);
    case '-name':
      return byName(b, a);
  }
}

function random(seed: number): () => number {
  let x = seed;
  return () => {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    return x / 2 ** 31;
  };
}

/** Follows rel="next" from `first` (checking each Link keeps the query), and returns every plant in order. */
async function walk(s: TestApp, first: string, onPage?: () => Promise<void>): Promise<PlantText[]> {
  const all: PlantText[] = [];
  const asked = new URL(first, s.url).searchParams;
  let path: string | undefined = first;
  while (path !== undefined) {
    const { plants, link } = await pageOf(await call(s, path));
    all.push(...plants);
    const next = nextLink(link);
    if (next === undefined) break;
    const url = new URL(next, s.url);
    for (const p of ['q', 'tag', 'limit']) assert.equal(url.searchParams.get(p), asked.get(p), `the Link keeps ${p}`);
    assert.equal(url.searchParams.get('sort') ?? 'id', asked.get('sort') ?? 'id', 'the Link keeps the sort');
    assert.equal(url.searchParams.get('after'), plants.at(-1)!.id, 'after is the last id of the page');
    path = url.pathname + url.search;
    await onPage?.();
  }
  return all;
}

function listPath(query: Record<string, string | undefined>): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined) params.set(k, v);
  return `/plants?${params}`;
}

test('q, tag and sort against a model: random names, random queries, every order, every page', async (t) => {
  const s = await startApp(t);
  const rnd = random(29);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!;
  const ids = new Set([INT64_MAX, '9223372036854775806', INT64_MIN, '-9223372036854775807', '0']);
  while (ids.size < 160) ids.add(String(BigInt(Math.floor((rnd() - 0.5) * 2 ** 52)) * 2047n));
  const plants: PlantText[] = [...ids].map((id, i) => {
    // A few names repeat, so that ties in the name order are broken by id.
    const name = i % 10 === 0 ? 'Fern' : Array.from({ length: 1 + Math.floor(rnd() * 6) }, () => pick(PIECES)).join('');
    const tag = pick(['x', 'y', undefined]);
    return { id, name, ...(tag !== undefined && { tag }) };
  });
  await seed(s, plants);

  for (let round = 0; round < 24; round++) {
    const order = pick(ORDERS);
    const tag = pick(['x', undefined, undefined]);
    // A piece of a name (case changed at random), or a text no name holds.
    const source = pick(plants).name;
    const start = Math.floor(rnd() * source.length);
    let q: string | undefined = [...source].slice(start, start + 3 + Math.floor(rnd() * 3)).join('');
    if ([...q].length < 3 || [...fold(q)].length < 3) q = round % 2 === 0 ? undefined : 'fer';
    else if (rnd() < 0.5) q = rnd() < 0.5 ? q.toUpperCase() : q.toLowerCase();
    const limit = 1 + Math.floor(rnd() * 40);
    const expected = plants
      .filter((p) => (tag === undefined || p.tag === tag) && (q === undefined || fold(p.name).includes(fold(q))))
      .sort((a, b) => compare(order, a, b));
    const path = listPath({ q, tag, sort: order === 'id' && round % 3 === 0 ? undefined : order, limit: String(limit) });
    assert.deepEqual(await walk(s, path), expected, `${path}`);
    const counted = await call(s, path, { headers: { prefer: 'count=exact' } });
    assert.equal(counted.headers.get('x-total-count'), String(expected.length), `${path}: X-Total-Count`);
    assert.equal(counted.headers.get('preference-applied'), 'count=exact');
    await counted.arrayBuffer();
  }
});

test('q folds case beyond ASCII and takes %, _, quotes and backslashes literally', async (t) => {
  const s = await startApp(t);
  const plants = [
    { id: '1', name: "Émile's Ivy" },
    { id: '2', name: 'Straße fern' },
    { id: '3', name: '100% cotton_plant' },
    { id: '4', name: '1000 cottonXplant' },
    { id: '5', name: 'back\\slash "quoted"' },
  ];
  await seed(s, plants);
  const found = async (q: string) => (await pageOf(await call(s, listPath({ q })))).plants.map((p) => p.id);
  assert.deepEqual(await found('ÉMILE'), ['1']);
  assert.deepEqual(await found("e's i"), ['1']);
  assert.deepEqual(await found('STRASSE'), ['2']);
  assert.deepEqual(await found('0% c'), ['3'], '% is literal');
  assert.deepEqual(await found('n_p'), ['3'], '_ is literal');
  assert.deepEqual(await found('k\\s'), ['5'], 'a backslash is literal');
  assert.deepEqual(await found('"quoted"'), ['5'], 'quotes are literal');
  assert.deepEqual(await found('%%%'), []);
  // What SQLite's full-text query syntax and LIKE give a meaning to is literal here.
  await seed(s, [
    { id: '6', name: 'star* (NEAR) col:umn ^caret -minus +plus' },
    { id: '7', name: 'this AND that OR NOT those' },
  ]);
  const literal: [string, string[]][] = [
    ['r* (', ['6']],
    ['(NEAR)', ['6']],
    ['col:umn', ['6']],
    ['^caret', ['6']],
    ['-minus +plus', ['6']],
    ['AND that OR NOT', ['7']],
    ['near', ['6']],
    ['***', []],
    ['"""', []],
  ];
  for (const [q, ids] of literal) assert.deepEqual(await found(q), ids, `q=${q}`);
  const plain = await call(s, '/plants');
  assert.equal(plain.headers.get('x-total-count'), null, 'no count unless asked');
  assert.equal(plain.headers.get('preference-applied'), null);
  await plain.arrayBuffer();
});

test('q ignores case and accents (epi finds Épipremnum, strasse finds Straße, ficus finds ﬁcus), sort=name reads as a person reads, pages exact across ties', async (t) => {
  const s = await startApp(t);
  // The names, a ligature and full-width letters (NFKD), a decomposed accent, and ties: one folded name
  // in several cases, and one exact name under several ids.
  const plants: PlantText[] = [
    { id: '1', name: 'Épipremnum aureum' },
    { id: '2', name: 'Straße Palm' },
    { id: '3', name: 'ﬁcus microcarpa' },
    { id: '4', name: 'FICUS elastica' },
    { id: '5', name: 'Ficus lyrata' },
    { id: '6', name: 'ficus benjamina' },
    { id: '7', name: 'Ｆｉｃｕｓ pumila' },
    { id: '8', name: 'Ficus' },
    { id: '9', name: 'ficus' },
    { id: '10', name: 'FICUS' },
    { id: '-3', name: 'Ficus' },
    { id: '11', name: 'Epipremnum pinnatum' },
    { id: '12', name: 'e\u0301pi' },
  ];
  await seed(s, plants);
  const found = async (q: string) => (await pageOf(await call(s, listPath({ q, sort: 'id' })))).plants.map((p) => p.id);
  for (const q of ['epi', 'ÉPI', 'épi', 'EPI', 'e\u0301pi']) assert.deepEqual(await found(q), ['1', '11', '12'], `q=${q}`);
  assert.deepEqual(await found('strasse'), ['2']);
  assert.deepEqual(await found('STRAẞE'), ['2'], 'capital sharp s');
  assert.deepEqual(await found('ficus'), ['-3', '3', '4', '5', '6', '7', '8', '9', '10']);
  assert.deepEqual(await found('ﬁcus m'), ['3']);
  assert.deepEqual(await found('ＣＵＳ ｐ'), ['7']);
  const short = await expectError(await call(s, listPath({ q: 'e\u0301\u0301' })), 400, 'three code points that fold to one');
  assert.match(short.message, /at least 3 characters once folded/);

  // By folded name, then the name (code points: FICUS, Ficus, ficus), then the id.
  const reading = ['12', '1', '11', '10', '-3', '8', '9', '6', '4', '5', '3', '7', '2'];
  const all = (await pageOf(await call(s, listPath({ sort: 'name', limit: '100' })))).plants;
  assert.deepEqual(all.map((p) => p.id), reading, all.map((p) => p.name).join(', '));
  // Every page size walks the same order, without a plant twice or missing, across every tie; -name reverses it.
  for (const limit of ['1', '2', '3', '5']) {
    assert.deepEqual((await walk(s, listPath({ sort: 'name', limit }))).map((p) => p.id), reading, `sort=name limit=${limit}`);
    assert.deepEqual((await walk(s, listPath({ sort: '-name', limit }))).map((p) => p.id), [...reading].reverse(), `sort=-name limit=${limit}`);
  }
  assert.deepEqual((await walk(s, listPath({ sort: 'name', q: 'FICUS', limit: '2' }))).map((p) => p.id), reading.filter((id) => ['-3', '3', '4', '5', '6', '7', '8', '9', '10'].includes(id)));
});

test('walks in every order under concurrent creates, renames and deletes see every lasting plant once', async (t) => {
  const s = await startApp(t);
  const lasting: PlantText[] = Array.from({ length: 90 }, (_, i) => ({ id: String(BigInt(INT64_MAX) - BigInt(i * 3)), name: `m${(i * 37) % 90} fern` }));
  await seed(s, lasting);
  let churn = 0;
  const write = async () => {
    // Three writes between pages: a create, a rename of it across the name order, a delete of an older one.
    const id = 1000 + churn++;
    await seed(s, [{ id: String(id), name: `${String.fromCharCode(97 + (id % 26))} fern` }]);
    assert.equal((await s.store.patchPlant(BigInt(id), { name: `${String.fromCharCode(122 - (id % 26))} fern` })).kind, 'changed');
    if (id > 1002) assert.equal((await s.store.deletePlant(BigInt(id - 3))).kind, 'changed');
  };
  for (const order of ORDERS) {
    const seen = await walk(s, listPath({ sort: order, q: 'fern', limit: '7' }), write);
    const ids = seen.map((p) => p.id);
    for (const p of lasting) assert.equal(ids.filter((id) => id === p.id).length, 1, `${order}: plant ${p.id} once`);
    const lastingSeen = seen.filter((p) => lasting.some((l) => l.id === p.id));
    assert.deepEqual(lastingSeen, [...lasting].sort((a, b) => compare(order, a, b)), `${order}: lasting plants in order`);
  }
});

test('a q holding U+0000 is a 400 that says why, with or without a count, never a 503', async (t) => {
  const s = await startApp(t);
  await seed(s, [{ id: '1', name: 'ab\u0000cde' }]);
  for (const q of ['ab\u0000c', '\u0000\u0000\u0000', 'abc\u0000']) {
    for (const headers of [{}, { prefer: 'count=exact' }] as Record<string, string>[]) {
      const refused = await expectError(await call(s, `/plants?q=${encodeURIComponent(q)}`, { headers }), 400, JSON.stringify(q));
      assert.match(refused.message, /q must not contain U\+0000 \(NUL\)/);
    }
  }
  // The name is there, and found by the text around the NUL.
  assert.deepEqual((await pageOf(await call(s, '/plants?q=cde'))).plants.map((p) => p.id), ['1']);
});

test('400s: an unknown sort names the choices, a short q, a cursor that does not fit the sort, an unknown parameter', async (t) => {
  const s = await startApp(t);
  const bad = await expectError(await call(s, '/plants?sort=size'), 400, 'sort=size');
  for (const choice of ORDERS) assert.ok(bad.message.includes(choice), `${bad.message} names ${choice}`);
  const short = await expectError(await call(s, '/plants?q=ab'), 400, 'q=ab');
  assert.match(short.message, /3/);
  await expectError(await call(s, `/plants?q=${encodeURIComponent('🌿🌿')}`), 400, 'two code points');
  assert.equal((await call(s, `/plants?q=${encodeURIComponent('🌿🌿🌿')}`)).status, 200, 'three code points');
  const idCursor = await expectError(await call(s, '/plants?after=1&after_name=x'), 400, 'after_name with sort=id');
  assert.match(idCursor.message, /after_name/);
  await expectError(await call(s, '/plants?sort=name&after=1'), 400, 'a name order without after_name');
  await expectError(await call(s, '/plants?sort=-name&after_name=x'), 400, 'after_name without after');
  await expectError(await call(s, '/plants?order=name'), 400, 'unknown parameter');
  await expectError(await call(s, '/plants?sort=name&sort=id'), 400, 'repeated sort');
});
