// An existing id: the same name and tag is a safe retry (200, same body); anything else is 409 and changes nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { errorOf, startApp } from '../helpers/app.js';

test('a retry of the same plant is 200 with the same body', async (t) => {
  const s = await startApp(t);

  await t.test('with a tag', async () => {
    const first = await s.postPlant('{"id": 1, "name": "fern", "tag": "green"}');
    const again = await s.postPlant('{"id": 1, "name": "fern", "tag": "green"}');
    assert.equal(first.status, 200);
    assert.equal(again.status, 200);
    assert.equal(again.headers.get('location'), '/plants/1');
    assert.deepEqual(await again.json(), await first.json());
    assert.deepEqual(await s.store.getPlant(1n), { id: 1n, name: 'fern', tag: 'green' });
  });

  await t.test('without a tag both times', async () => {
    const first = await s.postPlant('{"id": 2, "name": "moss"}');
    const again = await s.postPlant('{"id": 2, "name": "moss"}');
    assert.equal(first.status, 200);
    assert.equal(again.status, 200);
    assert.deepEqual(await again.json(), { name: 'moss' });
    assert.deepEqual(await s.store.getPlant(2n), { id: 2n, name: 'moss' });
  });

  await t.test('many retries, with different unknown fields and another spelling of the id', async () => {
    for (const body of [
      '{"id": 3, "name": "ivy"}',
      '{"id": 3, "name": "ivy", "attempt": 2}',
      '{"name": "ivy", "id": 3.0}',
      '{"id": 3e0, "name": "ivy", "pad": 12345678901234567890}',
    ]) {
      const res = await s.postPlant(body);
      assert.equal(res.status, 200, body);
      assert.deepEqual(await res.json(), { name: 'ivy' });
    }
  });

  await t.test('a big id retried', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await s.postPlant('{"id": 9223372036854775807, "name": "max", "tag": "edge"}');
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('location'), '/plants/9223372036854775807');
      assert.deepEqual(await res.json(), { name: 'max', tag: 'edge' });
    }
  });

  await t.test('retries add no rows', async () => {
    assert.equal(await s.store.countPlants(), 4);
  });
});

test('the same id with a different plant is 409 and leaves the stored row unchanged', async (t) => {
  const s = await startApp(t);
  const seed = async (id: number, body: string) => {
    const res = await s.postPlant(body);
    assert.equal(res.status, 200, `seed ${id}`);
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
  for (const id of [1n, 2n, 3n, 4n]) before.set(id, await s.store.getPlant(id));

  for (const [label, body, id] of conflicts) {
    await t.test(`${label} -> 409 Error`, async () => {
      const res = await s.postPlant(body);
      assert.equal(res.status, 409);
      assert.equal(res.headers.get('location'), null, 'no Location on a conflict');
      const err = await errorOf(res);
      assert.match(err.message, new RegExp(`\\b${id}\\b`), 'the message names the id');
      assert.deepEqual(await s.store.getPlant(id), before.get(id));
    });
  }

  await t.test('the original plant is still a replay after the conflicts', async () => {
    const res = await s.postPlant('{"id": 1, "name": "fern", "tag": "green"}');
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { name: 'fern', tag: 'green' });
    assert.equal(await s.store.countPlants(), 4);
  });
});

test('concurrent creates of one id: exactly one plant wins, the rest conflict or replay', async (t) => {
  const s = await startApp(t);

  await t.test('20 parallel POSTs with different names: one 200, nineteen 409', async () => {
    const id = '9007199254740993';
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, i) => s.postPlant(`{"id": ${id}, "name": "racer-${i}"}`)),
    );
    const ok = responses.filter((r) => r.status === 200);
    const conflicts = responses.filter((r) => r.status === 409);
    assert.equal(ok.length, 1, `statuses ${responses.map((r) => r.status).join(',')}`);
    assert.equal(conflicts.length, 19);
    for (const r of conflicts) await errorOf(r);
    const winner = (await ok[0]!.json()) as { name: string };
    assert.deepEqual(await s.store.getPlant(BigInt(id)), { id: BigInt(id), name: winner.name });
    // The winner's own retry is a replay; every loser's retry is still a conflict.
    const replay = await s.postPlant(`{"id": ${id}, "name": ${JSON.stringify(winner.name)}}`);
    assert.equal(replay.status, 200);
    const loser = winner.name === 'racer-0' ? 'racer-1' : 'racer-0';
    assert.equal((await s.postPlant(`{"id": ${id}, "name": "${loser}"}`)).status, 409);
  });

  await t.test('20 parallel identical POSTs: all 200 with the same body, one row', async () => {
    const responses = await Promise.all(
      Array.from({ length: 20 }, () => s.postPlant('{"id": 77, "name": "twin", "tag": "t"}')),
    );
    for (const r of responses) {
      assert.equal(r.status, 200);
      assert.deepEqual(await r.json(), { name: 'twin', tag: 't' });
    }
    assert.deepEqual(await s.store.getPlant(77n), { id: 77n, name: 'twin', tag: 't' });
  });

  await t.test('parallel POSTs mixing identical and different plants for one id', async () => {
    const bodies = Array.from({ length: 30 }, (_, i) => (i % 3 === 0 ? '{"id": -5, "name": "b"}' : '{"id": -5, "name": "a"}'));
    const responses = await Promise.all(bodies.map((b) => s.postPlant(b)));
    const stored = await s.store.getPlant(-5n);
    assert.ok(stored && (stored.name === 'a' || stored.name === 'b'));
    for (let i = 0; i < bodies.length; i++) {
      const sentName = i % 3 === 0 ? 'b' : 'a';
      const expected: number = sentName === stored.name ? 200 : 409;
      assert.equal(responses[i]!.status, expected, `request ${i} sent ${sentName}, stored ${stored.name}`);
    }
  });

  await t.test('100 parallel creates of different ids: all 200, all stored', async () => {
    const ids = Array.from({ length: 100 }, (_, i) => 9223372036854775000n + BigInt(i));
    const responses = await Promise.all(ids.map((id) => s.postPlant(`{"id": ${id}, "name": "bulk-${id}"}`)));
    for (const r of responses) assert.equal(r.status, 200);
    for (const id of ids) assert.deepEqual(await s.store.getPlant(id), { id, name: `bulk-${id}` });
    assert.equal(await s.store.countPlants(), 103);
  });
});
