// PUT and PATCH /plants/{id} with ETags and conditional requests (RFC 9110, RFC 7396), over real HTTP on the
// engine under test: replace and merge-patch rules, every error status, ETags that change with every change
// and only then, 304, If-Match races with exactly one winner, and REQUIRE_IF_MATCH's 428. Bodies are sent
// as JSON text, so ids beyond 2^53 stay exact.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../../src/storage/open-store.js';
import { startApp, type TestApp } from '../helpers/app.js';
import { storedPlant } from '../helpers/stored-plant.js';
import { ABOVE_2_53, INT64_MAX, expectError, parseLossless } from './read-support.js';

const MERGE_PATCH = 'application/merge-patch+json';

/** One request with a JSON text body (sent as is) and the write token unless another is given. */
function send(s: TestApp, method: string, id: string, body?: string, headers: Record<string, string> = {}, token: string | null = s.token.write) {
  return fetch(`${s.url}/plants/${id}`, {
    method,
    headers: {
      ...(token !== null && { authorization: `Bearer ${token}` }),
      ...(body !== undefined && { 'content-type': method === 'PATCH' ? MERGE_PATCH : 'application/json' }),
      ...headers,
    },
    ...(body !== undefined && { body }),
  });
}

const put = (s: TestApp, id: string, body: string, headers?: Record<string, string>) => send(s, 'PUT', id, body, headers);
const patch = (s: TestApp, id: string, body: string, headers?: Record<string, string>) => send(s, 'PATCH', id, body, headers);
const get = (s: TestApp, id: string, headers?: Record<string, string>) => send(s, 'GET', id, undefined, headers, s.token.read);
const del = (s: TestApp, id: string, headers?: Record<string, string>) => send(s, 'DELETE', id, undefined, headers);

/** 200 with a plant: its members as text (ids digit for digit) and its ETag. */
async function plantAnswer(res: Response, what = ''): Promise<{ plant: Record<string, string>; etag: string }> {
  const text = await res.text();
  assert.equal(res.status, 200, `${what}: ${text}`);
  const etag = res.headers.get('etag');
  assert.match(etag ?? '', /^"\d+"$/, `${what}: a strong ETag`);
  const parsed = parseLossless(text) as Record<string, { text: string } | string>;
  const plant = Object.fromEntries(Object.entries(parsed).map(([k, v]) => [k, typeof v === 'string' ? v : v.text]));
  return { plant, etag: etag! };
}

async function create(s: TestApp, body: string): Promise<string> {
  const res = await s.postPlant(body);
  await res.arrayBuffer();
  assert.equal(res.status, 200);
  const etag = res.headers.get('etag');
  assert.match(etag ?? '', /^"\d+"$/, 'POST answers the ETag of the plant');
  return etag!;
}

test('PUT replaces name and tag, answers the plant with a new ETag, and GET shows both', async (t) => {
  const s = await startApp(t);
  const first = await create(s, `{"id": ${INT64_MAX}, "name": "fern", "tag": "green"}`);
  const { plant, etag } = await plantAnswer(await put(s, INT64_MAX, '{"name": "moss", "tag": "wet"}'), 'PUT');
  assert.deepEqual(plant, { id: INT64_MAX, name: 'moss', tag: 'wet' });
  assert.notEqual(etag, first);
  const read = await plantAnswer(await get(s, INT64_MAX), 'GET');
  assert.deepEqual(read, { plant: { id: INT64_MAX, name: 'moss', tag: 'wet' }, etag });

  // No tag in the body: the plant has none afterwards. An id equal to the path's is accepted.
  const untagged = await plantAnswer(await put(s, INT64_MAX, `{"id": ${INT64_MAX}, "name": "moss"}`));
  assert.deepEqual(untagged.plant, { id: INT64_MAX, name: 'moss' });
  assert.notEqual(untagged.etag, etag);
  // Fields the schema does not name are ignored, as for a create.
  const extra = await plantAnswer(await put(s, INT64_MAX, '{"name": "moss", "colour": "green"}'));
  assert.deepEqual(extra.plant, { id: INT64_MAX, name: 'moss' });
  // The same content again changes nothing and keeps the ETag.
  assert.equal(extra.etag, untagged.etag);
  assert.deepEqual(await storedPlant(s.store, BigInt(INT64_MAX)), { id: BigInt(INT64_MAX), name: 'moss' });
});

test('PUT errors: 404 for an absent plant, 400 for a different id or a bad body, 415 for another type, 401 and 403; nothing changes', async (t) => {
  const s = await startApp(t);
  await create(s, `{"id": ${ABOVE_2_53}, "name": "fern"}`);
  await expectError(await put(s, '5', '{"name": "x"}'), 404, 'absent');
  assert.equal(await storedPlant(s.store, 5n), undefined, 'PUT does not create');
  assert.match((await expectError(await put(s, ABOVE_2_53, '{"id": 9007199254740992, "name": "x"}'), 400, 'id')).message, /9007199254740992.*9007199254740993/);
  await expectError(await put(s, ABOVE_2_53, '{"tag": "no name"}'), 400, 'no name');
  await expectError(await put(s, ABOVE_2_53, '{"name": 5}'), 400, 'name not a string');
  await expectError(await put(s, ABOVE_2_53, '{"name": "x", "tag": null}'), 400, 'null tag in a PUT');
  await expectError(await put(s, ABOVE_2_53, '{"name": '), 400, 'malformed');
  await expectError(await send(s, 'PUT', ABOVE_2_53), 400, 'no body');
  await expectError(await put(s, ABOVE_2_53, '{"name": "x"}', { 'content-type': 'text/plain' }), 415, 'text');
  assert.match((await expectError(await put(s, ABOVE_2_53, '{"name": "x"}', { 'content-type': MERGE_PATCH }), 415, 'merge patch')).message, /application\/json/);
  await expectError(await send(s, 'PUT', ABOVE_2_53, '{"name": "x"}', {}, null), 401, 'anonymous');
  await expectError(await send(s, 'PUT', ABOVE_2_53, '{"name": "x"}', {}, s.token.read), 403, 'read-only token');
  await expectError(await put(s, '01', '{"name": "x"}'), 400, 'id not canonical');
  assert.deepEqual(await storedPlant(s.store, BigInt(ABOVE_2_53)), { id: BigInt(ABOVE_2_53), name: 'fern' });
});

test('PATCH is a JSON merge patch: a member sets, null removes the tag, absent members stay; its errors change nothing', async (t) => {
  const s = await startApp(t);
  const created = await create(s, `{"id": -9223372036854775808, "name": "fern", "tag": "green"}`);
  const id = '-9223372036854775808';
  const renamed = await plantAnswer(await patch(s, id, '{"name": "moss"}'), 'rename');
  assert.deepEqual(renamed.plant, { id, name: 'moss', tag: 'green' });
  assert.notEqual(renamed.etag, created);
  const retagged = await plantAnswer(await patch(s, id, '{"tag": "wet"}'), 'retag');
  assert.deepEqual(retagged.plant, { id, name: 'moss', tag: 'wet' });
  const untagged = await plantAnswer(await patch(s, id, '{"tag": null}'), 'untag');
  assert.deepEqual(untagged.plant, { id, name: 'moss' });
  assert.equal(new Set([created, renamed.etag, retagged.etag, untagged.etag]).size, 4, 'every change has its own ETag');
  // An empty patch, or one that sets what is there, changes nothing and keeps the ETag.
  assert.equal((await plantAnswer(await patch(s, id, '{}'))).etag, untagged.etag);
  assert.equal((await plantAnswer(await patch(s, id, `{"id": ${id}, "name": "moss", "tag": null}`))).etag, untagged.etag);

  assert.match((await expectError(await patch(s, id, '{"name": null}'), 400, 'null name')).message, /name/);
  // A misspelt member is named, with the members the patch takes.
  assert.equal((await expectError(await patch(s, id, '{"nmae": "typo"}'), 400, 'unknown member')).message, "Unknown member 'nmae' in the body: this operation takes id, name, tag.");
  await expectError(await patch(s, id, '{"id": 1, "name": "x"}'), 400, 'another id');
  await expectError(await patch(s, id, '["name"]'), 400, 'not an object');
  assert.match((await expectError(await patch(s, id, '{"name": "x"}', { 'content-type': 'application/json' }), 415, 'plain JSON')).message, /merge-patch/);
  await expectError(await patch(s, '77', '{"name": "x"}'), 404, 'absent');
  await expectError(await send(s, 'PATCH', id, '{"name": "x"}', {}, s.token.read), 403, 'read-only token');
  assert.deepEqual(await storedPlant(s.store, BigInt(id)), { id: BigInt(id), name: 'moss' });
});

test('ETag and If-None-Match: GET answers 304 with no body for the current tag (weakly compared) or *, 200 otherwise', async (t) => {
  const s = await startApp(t);
  const etag = await create(s, '{"id": 1, "name": "fern"}');
  assert.equal((await plantAnswer(await get(s, '1'))).etag, etag);
  for (const value of [etag, `W/${etag}`, `"0", ${etag}`, '*']) {
    const res = await get(s, '1', { 'if-none-match': value });
    assert.equal(res.status, 304, value);
    assert.equal(res.headers.get('etag'), etag);
    assert.equal((await res.arrayBuffer()).byteLength, 0);
  }
  assert.equal((await plantAnswer(await get(s, '1', { 'if-none-match': '"0"' }))).etag, etag);
  await expectError(await get(s, '1', { 'if-none-match': 'no quotes' }), 400, 'malformed');
  await expectError(await get(s, '2', { 'if-none-match': '*' }), 404, 'absent');
  // After a change the old tag no longer matches.
  const changed = await plantAnswer(await put(s, '1', '{"name": "moss"}'));
  assert.deepEqual((await plantAnswer(await get(s, '1', { 'if-none-match': etag }))).plant, { id: '1', name: 'moss' });
  assert.equal((await get(s, '1', { 'if-none-match': changed.etag })).status, 304);
});

test('a replayed POST answers the current ETag; after an update, replaying the original create is 409', async (t) => {
  const s = await startApp(t);
  const etag = await create(s, '{"id": 3, "name": "fern"}');
  assert.equal(await create(s, '{"id": 3, "name": "fern"}'), etag);
  await plantAnswer(await put(s, '3', '{"name": "moss"}'));
  await expectError(await s.postPlant('{"id": 3, "name": "fern"}'), 409, 'replay after update');
  const current = (await plantAnswer(await get(s, '3'))).etag;
  assert.equal(await create(s, '{"id": 3, "name": "moss"}'), current, 'a create of what is stored now replays with its ETag');
});

test('If-Match: the current tag, * or a list holding it lets PUT, PATCH and DELETE through; a stale or weak tag is 412 and changes nothing', async (t) => {
  const s = await startApp(t);
  const v1 = await create(s, '{"id": 10, "name": "fern"}');
  const v2 = (await plantAnswer(await put(s, '10', '{"name": "moss"}', { 'if-match': v1 }), 'current tag')).etag;
  for (const [what, res] of [
    ['PUT stale', await put(s, '10', '{"name": "x"}', { 'if-match': v1 })],
    ['PATCH stale', await patch(s, '10', '{"name": "x"}', { 'if-match': v1 })],
    ['DELETE stale', await del(s, '10', { 'if-match': v1 })],
    ['PUT weak', await put(s, '10', '{"name": "x"}', { 'if-match': `W/${v2}` })],
    ['PUT same content, stale tag', await put(s, '10', '{"name": "moss"}', { 'if-match': v1 })],
  ] as const) {
    assert.match((await expectError(res, 412, what)).message, /If-Match/);
  }
  assert.deepEqual(await plantAnswer(await get(s, '10')), { plant: { id: '10', name: 'moss' }, etag: v2 });

  const v3 = (await plantAnswer(await patch(s, '10', '{"tag": "t"}', { 'if-match': `"1", ${v2}` }), 'list')).etag;
  const v4 = (await plantAnswer(await put(s, '10', '{"name": "ivy"}', { 'if-match': '*' }), 'star')).etag;
  assert.equal(new Set([v1, v2, v3, v4]).size, 4);
  await expectError(await put(s, '10', '{"name": "x"}', { 'if-match': 'moss' }), 400, 'malformed If-Match');
  // An absent plant is 404 whatever the precondition.
  await expectError(await put(s, '11', '{"name": "x"}', { 'if-match': '*' }), 404, 'absent, *');
  await expectError(await del(s, '11', { 'if-match': v4 }), 404, 'absent, tag');

  const res = await del(s, '10', { 'if-match': v4 });
  assert.equal(res.status, 204);
  assert.equal(await storedPlant(s.store, 10n), undefined);
  // Made again, the plant has a tag no earlier version had: an old tag cannot touch it.
  const again = await create(s, '{"id": 10, "name": "fern"}');
  assert.ok(![v1, v2, v3, v4].includes(again), `${again} was used before`);
  await expectError(await put(s, '10', '{"name": "x"}', { 'if-match': v1 }), 412, 'tag of an earlier life');
});

test('concurrent PUTs and PATCHes with the same If-Match: exactly one 200, the rest 412, and the stored plant is the winner', async (t) => {
  const s = await startApp(t);
  let etag = await create(s, `{"id": ${ABOVE_2_53}, "name": "start"}`);
  for (let round = 0; round < 5; round++) {
    const method = round % 2 === 0 ? put : patch;
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => method(s, ABOVE_2_53, `{"name": "round ${round} writer ${i}"}`, { 'if-match': etag })),
    );
    const statuses = answers.map((r) => r.status);
    assert.equal(statuses.filter((x) => x === 200).length, 1, `round ${round}: ${statuses.join(' ')}`);
    assert.equal(statuses.filter((x) => x === 412).length, 19, `round ${round}: ${statuses.join(' ')}`);
    const winner = answers.find((r) => r.status === 200)!;
    const { plant, etag: next } = await plantAnswer(winner);
    for (const r of answers) if (r !== winner) await r.arrayBuffer();
    assert.deepEqual(await plantAnswer(await get(s, ABOVE_2_53)), { plant, etag: next });
    etag = next;
  }
});

test('without If-Match, concurrent PATCHes of different members all apply (none is lost) and each answer shows what it stored', async (t) => {
  const s = await startApp(t);
  await create(s, '{"id": 20, "name": "start", "tag": "t0"}');
  const answers = await Promise.all([
    patch(s, '20', '{"name": "renamed"}'),
    patch(s, '20', '{"tag": "t1"}'),
  ]);
  const shown = await Promise.all(answers.map((r) => plantAnswer(r)));
  assert.equal(shown[0]!.plant.name, 'renamed');
  assert.equal(shown[1]!.plant.tag, 't1');
  assert.deepEqual((await plantAnswer(await get(s, '20'))).plant, { id: '20', name: 'renamed', tag: 't1' });
});

test('REQUIRE_IF_MATCH: PUT, PATCH and DELETE without If-Match are 428 and change nothing; with it they work; reads and creates are unaffected', async (t) => {
  const s = await startApp(t, { config: { requireIfMatch: true } });
  const etag = await create(s, '{"id": 30, "name": "fern"}');
  for (const [what, res] of [
    ['PUT', await put(s, '30', '{"name": "x"}')],
    ['PATCH', await patch(s, '30', '{"name": "x"}')],
    ['DELETE', await del(s, '30')],
  ] as const) {
    assert.match((await expectError(res, 428, what)).message, /If-Match/);
  }
  assert.deepEqual(await plantAnswer(await get(s, '30')), { plant: { id: '30', name: 'fern' }, etag });
  const next = (await plantAnswer(await put(s, '30', '{"name": "moss"}', { 'if-match': etag }))).etag;
  assert.equal((await del(s, '30', { 'if-match': next })).status, 204);
});

test('updates and deletes are committed before they are answered: another connection to the store sees them at once', async (t) => {
  const s = await startApp(t);
  await create(s, '{"id": 40, "name": "fern"}');
  await create(s, '{"id": 41, "name": "ivy"}');
  await plantAnswer(await put(s, '40', '{"name": "moss", "tag": "wet"}'));
  assert.equal((await del(s, '41')).status, 204);
  const { store } = await openStore(s.databaseUrl);
  t.after(() => store.close());
  assert.deepEqual(await storedPlant(store, 40n), { id: 40n, name: 'moss', tag: 'wet' });
  assert.equal(await storedPlant(store, 41n), undefined);
});
