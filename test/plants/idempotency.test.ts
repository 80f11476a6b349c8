// An existing id: the same name and tag is a safe retry (200, same body); anything else is 409 and changes nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { NewPlant } from '@plant-store/client';
import { startApp } from '../helpers/app.js';
import { clientError, clientFor } from '../helpers/client.js';
import { storedPlant } from '../helpers/stored-plant.js';

test('a retry of the same plant is 200 with the same body', async (t) => {
  const s = await startApp(t);
  const client = clientFor(s, s.token.write);

  await t.test('with a tag', async () => {
    const first = await client.POST('/plants', { body: { id: 1n, name: 'fern', tag: 'green' } });
    const again = await client.POST('/plants', { body: { id: 1n, name: 'fern', tag: 'green' } });
    assert.equal(first.response.status, 200);
    assert.equal(again.response.status, 200);
    assert.equal(again.response.headers.get('location'), '/plants/1');
    assert.deepEqual(first.data, { name: 'fern', tag: 'green' });
    assert.deepEqual(again.data, first.data);
    assert.deepEqual(await storedPlant(s.store, 1n), { id: 1n, name: 'fern', tag: 'green' });
  });

  await t.test('without a tag both times', async () => {
    const first = await client.POST('/plants', { body: { id: 2n, name: 'moss' } });
    const again = await client.POST('/plants', { body: { id: 2n, name: 'moss' } });
    assert.equal(first.response.status, 200);
    assert.equal(again.response.status, 200);
    assert.deepEqual(again.data, { name: 'moss' });
    assert.deepEqual(await storedPlant(s.store, 2n), { id: 2n, name: 'moss' });
  });

  // Raw text on purpose: member order and unknown members cannot be chosen through the client. (Other
  // spellings of the id, 3.0 or 3e0, are 400: test/plants/int64.test.ts.)
  await t.test('many retries, with different unknown fields and another member order', async () => {
    for (const body of [
      '{"id": 3, "name": "ivy"}',
      '{"id": 3, "name": "ivy", "attempt": 2}',
      '{"name": "ivy", "id": 3}',
      '{"id": 3, "name": "ivy", "pad": 12345678901234567890}',
    ]) {
      const res = await s.postPlant(body);
      assert.equal(res.status, 200, body);
      assert.deepEqual(await res.json(), { name: 'ivy' });
    }
  });

  await t.test('a big id retried', async () => {
    for (let i = 0; i < 3; i++) {
      const { data, response } = await client.POST('/plants', { body: { id: 9223372036854775807n, name: 'max', tag: 'edge' } });
      assert.equal(response.status, 200);
      assert.equal(response.headers.get('location'), '/plants/9223372036854775807');
      assert.deepEqual(data, { name: 'max', tag: 'edge' });
    }
  });

  await t.test('retries add no rows', async () => {
    assert.equal(await s.store.countPlants(), 4);
  });
});

test('the same id with a different plant is 409 and leaves the stored row unchanged', async (t) => {
  const s = await startApp(t);
  const client = clientFor(s, s.token.write);
  // The tables below are written as JSON text for readability; the client sends them with a bigint id.
  const plantOf = (body: string): NewPlant => {
    const { id, ...rest } = JSON.parse(body) as { id: number; name: string; tag?: string };
    return { id: BigInt(id), ...rest };
  };
  const seed = async (id: number, body: string) => {
    const { response } = await client.POST('/plants', { body: plantOf(body) });
    assert.equal(response.status, 200, `seed ${id}`);
  };
  await seed(1, '{"id": 1, "name": "fern", "tag": "green"}');
  await seed(2, '{"id": 2, "name": "moss"}');
  await seed(3, '{"id": 3, "name": "ivy", "tag": ""}');
  await seed(4, '{"id": 4, "name": "caf\\u00e9"}');

  const conflicts: Array<[string, string, bigint]> = [
    ['different name', '{"id": 1, "name": "palm", "tag": "green"}', 1n],
    ['different tag', '{"id": 1, "name": "fern", "tag": "red"}', 1n],
    ['tag removed', '{"id": 1, "name": "fern"}', 1n],
    ['name differing only in case', '{"id": 1, "name": "Fern", "tag": "green"}', 1n],
    ['name with a trailing space', '{"id": 1, "name": "fern ", "tag": "green"}', 1n],
    ['name and tag swapped', '{"id": 1, "name": "green", "tag": "fern"}', 1n],
    ['tag added', '{"id": 2, "name": "moss", "tag": "soft"}', 2n],
    ['empty tag added', '{"id": 2, "name": "moss", "tag": ""}', 2n],
    ['empty tag removed', '{"id": 3, "name": "ivy"}', 3n],
    ['the same name in decomposed Unicode', '{"id": 4, "name": "cafe\\u0301"}', 4n],
  ];
  const before = new Map<bigint, unknown>();
  for (const id of [1n, 2n, 3n, 4n]) before.set(id, await storedPlant(s.store, id));

  for (const [label, body, id] of conflicts) {
    await t.test(`${label} -> 409 Error`, async () => {
      const result = await client.POST('/plants', { body: plantOf(body) });
      assert.equal(result.response.headers.get('location'), null, 'no Location on a conflict');
      const err = clientError(result, 409);
      assert.match(err.message, new RegExp(`\\b${id}\\b`), 'the message names the id');
      assert.deepEqual(await storedPlant(s.store, id), before.get(id));
    });
  }

  await t.test('the original plant is still a replay after the conflicts', async () => {
    const { data, response } = await client.POST('/plants', { body: { id: 1n, name: 'fern', tag: 'green' } });
    assert.equal(response.status, 200);
    assert.deepEqual(data, { name: 'fern', tag: 'green' });
    assert.equal(await s.store.countPlants(), 4);
  });
});

test('concurrent creates of one id: exactly one plant wins, the rest conflict or replay', async (t) => {
  const s = await startApp(t);
  const client = clientFor(s, s.token.write);

  await t.test('20 parallel POSTs with different names: one 200, nineteen 409', async () => {
    const id = 9007199254740993n;
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => client.POST('/plants', { body: { id, name: `racer-${i}` } })));
    const ok = results.filter((r) => r.response.status === 200);
    const conflicts = results.filter((r) => r.response.status === 409);
    assert.equal(ok.length, 1, `statuses ${results.map((r) => r.response.status).join(',')}`);
    assert.equal(conflicts.length, 19);
    for (const r of conflicts) clientError(r, 409);
    const winner = ok[0]!.data!;
    assert.match(winner.name, /^racer-\d+$/);
    assert.deepEqual(await storedPlant(s.store, id), { id, name: winner.name });
    // The winner's own retry is a replay; every loser's retry is still a conflict.
    const replay = await client.POST('/plants', { body: { id, name: winner.name } });
    assert.equal(replay.response.status, 200);
    const loser = winner.name === 'racer-0' ? 'racer-1' : 'racer-0';
    clientError(await client.POST('/plants', { body: { id, name: loser } }), 409);
  });

  await t.test('20 parallel identical POSTs: all 200 with the same body, one row', async () => {
    const results = await Promise.all(Array.from({ length: 20 }, () => client.POST('/plants', { body: { id: 77n, name: 'twin', tag: 't' } })));
    for (const r of results) {
      assert.equal(r.response.status, 200);
      assert.deepEqual(r.data, { name: 'twin', tag: 't' });
    }
    assert.deepEqual(await storedPlant(s.store, 77n), { id: 77n, name: 'twin', tag: 't' });
  });

  await t.test('parallel POSTs mixing identical and different plants for one id', async () => {
    const names = Array.from({ length: 30 }, (_, i) => (i % 3 === 0 ? 'b' : 'a'));
    const results = await Promise.all(names.map((name) => client.POST('/plants', { body: { id: -5n, name } })));
    const stored = await storedPlant(s.store, -5n);
    assert.ok(stored && (stored.name === 'a' || stored.name === 'b'));
    for (let i = 0; i < names.length; i++) {
      const sentName = names[i]!;
      const expected: number = sentName === stored.name ? 200 : 409;
      assert.equal(results[i]!.response.status, expected, `request ${i} sent ${sentName}, stored ${stored.name}`);
    }
  });

  await t.test('100 parallel creates of different ids: all 200, all stored', async () => {
    const ids = Array.from({ length: 100 }, (_, i) => 9223372036854775000n + BigInt(i));
    const results = await Promise.all(ids.map((id) => client.POST('/plants', { body: { id, name: `bulk-${id}` } })));
    for (const r of results) assert.equal(r.response.status, 200);
    for (const id of ids) assert.deepEqual(await storedPlant(s.store, id), { id, name: `bulk-${id}` });
    assert.equal(await s.store.countPlants(), 103);
  });
});
