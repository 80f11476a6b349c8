// DELETE /plants/{id}: 204 with no body, then the plant is gone (GET 404, DELETE 404, not listed); the id
// can be created again; exact over int64; 400 for bad ids with nothing deleted; plants:write scope.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseRawResponse, rawHttp, startApp, type TestApp } from '../helpers/app.js';
import {
  ABOVE_2_53, BAD_IDS, INT64_MAX, INT64_MIN, call, createPlant, expectError, label, listIds, plantOf, sortIds, type PlantText,
} from './read-support.js';

function del(s: TestApp, id: string, token: string | null = s.token.write) {
  return call(s, `/plants/${id}`, { method: 'DELETE', token });
}

test('DELETE /plants/{id}', async (t) => {
  const s = await startApp(t);
  const plants: PlantText[] = [
    { id: '1', name: 'fern', tag: 'green' },
    { id: '2', name: 'moss' },
    { id: '3', name: 'ivy', tag: 'climber' },
    { id: INT64_MAX, name: 'max' },
    { id: '9223372036854775806', name: 'max - 1' },
    { id: INT64_MIN, name: 'min' },
    { id: '-9223372036854775807', name: 'min + 1' },
    { id: ABOVE_2_53, name: '2^53 + 1' },
    { id: '9007199254740992', name: '2^53' },
    { id: '-9007199254740993', name: '-(2^53 + 1)' },
    { id: '-9007199254740992', name: '-(2^53)' },
  ];
  for (const p of plants) await createPlant(s, p);
  const remaining = new Set(plants.map((p) => p.id));

  await t.test('204 with no body at all: no Content-Type, no body bytes', async () => {
    const raw = await rawHttp(s.port, `DELETE /plants/1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.token.write}\r\nConnection: close\r\n\r\n`, 200);
    const res = parseRawResponse(raw);
    assert.equal(res.status, 204, raw);
    assert.equal(res.body, '', 'nothing after the headers');
    assert.equal(res.headers['content-type'], undefined);
    assert.ok(res.headers['content-length'] === undefined || res.headers['content-length'] === '0');
    assert.equal(res.headers['transfer-encoding'], undefined);
    remaining.delete('1');
  });

  await t.test('then GET is 404, DELETE again is 404, and the list no longer has it', async () => {
    await expectError(await call(s, '/plants/1'), 404);
    await expectError(await del(s, '1'), 404);
    assert.deepEqual(await listIds(s, '?limit=1000'), sortIds(remaining));
  });

  await t.test('a fetch client sees 204 and an empty body; the connection stays usable', async () => {
    const res = await del(s, '2');
    assert.equal(res.status, 204);
    assert.equal(await res.text(), '');
    remaining.delete('2');
    assert.deepEqual(await plantOf(await call(s, '/plants/3')), { id: '3', name: 'ivy', tag: 'climber' });
  });

  await t.test('after a delete the id can be created again, with a different name (200, not 409)', async () => {
    const again = await s.postPlant('{"id": 1, "name": "palm"}');
    assert.equal(again.status, 200);
    assert.deepEqual(await again.json(), { name: 'palm' });
    assert.equal(again.headers.get('location'), '/plants/1');
    // The old tag is gone with the old plant.
    assert.deepEqual(await plantOf(await call(s, '/plants/1')), { id: '1', name: 'palm' });
    // And the new plant is an ordinary one: an identical replay is 200, a different one 409.
    assert.equal((await s.postPlant('{"id": 1, "name": "palm"}')).status, 200);
    await expectError(await s.postPlant('{"id": 1, "name": "fern", "tag": "green"}'), 409);
    // Same name as before the delete is fine too.
    assert.equal((await del(s, '2')).status, 404);
    assert.equal((await s.postPlant('{"id": 2, "name": "moss"}')).status, 200);
    assert.deepEqual(await plantOf(await call(s, '/plants/2')), { id: '2', name: 'moss' });
    remaining.add('1');
    remaining.add('2');
  });

  await t.test('int64 edges: each delete removes exactly that id, never its double-sharing neighbour', async () => {
    for (const [id, neighbour] of [
      [INT64_MAX, '9223372036854775806'],
      [INT64_MIN, '-9223372036854775807'],
      [ABOVE_2_53, '9007199254740992'],
      ['-9007199254740993', '-9007199254740992'],
    ] as const) {
      const res = await del(s, id);
      assert.equal(res.status, 204, id);
      assert.equal(await res.text(), '');
      remaining.delete(id);
      await expectError(await call(s, `/plants/${id}`), 404, id);
      assert.equal((await plantOf(await call(s, `/plants/${neighbour}`))).id, neighbour);
      assert.deepEqual(await listIds(s, '?limit=1000'), sortIds(remaining));
      // Created again under the exact id.
      await createPlant(s, { id, name: 'reborn' });
      assert.deepEqual(await plantOf(await call(s, `/plants/${id}`)), { id, name: 'reborn' });
      remaining.add(id);
    }
  });

  await t.test('absent ids are 404 Error and delete nothing', async () => {
    for (const id of ['4', '-1', '0', '9223372036854775805', '9007199254740994']) {
      await expectError(await del(s, id), 404, id);
    }
    assert.deepEqual(await listIds(s, '?limit=1000'), sortIds(remaining));
  });

  for (const id of BAD_IDS) {
    await t.test(`id ${label(id)} is 400 Error and deletes nothing`, async () => {
      await expectError(await del(s, encodeURIComponent(id)), 400, id);
    });
  }

  await t.test('after all the 400s every plant is still there', async () => {
    await expectError(await del(s, '+1'), 400);
    await expectError(await del(s, ''), 400);
    assert.deepEqual(await listIds(s, '?limit=1000'), sortIds(remaining));
    assert.equal(await s.store.countPlants(), remaining.size);
  });
});

test('DELETE /plants/{id}: concurrent deletes of one plant, exactly one 204', async (t) => {
  const s = await startApp(t);
  for (const id of ['5', INT64_MAX]) {
    await createPlant(s, { id, name: 'once' });
    const results = await Promise.all(Array.from({ length: 10 }, () => del(s, id)));
    const statuses = results.map((r) => r.status).sort();
    assert.deepEqual(statuses, [204, ...Array(9).fill(404)], id);
    for (const r of results) if (r.status === 404) await expectError(r, 404);
    await expectError(await call(s, `/plants/${id}`), 404);
  }
});

test('DELETE /plants/{id}: needs plants:write', async (t) => {
  const s = await startApp(t);
  await createPlant(s, { id: '1', name: 'fern' });

  await t.test('a read-only token is 403 insufficient_scope naming plants:write, and the plant stays', async () => {
    const res = await del(s, '1', s.token.read);
    const challenge = res.headers.get('www-authenticate') ?? '';
    assert.match(challenge, /error="insufficient_scope"/);
    assert.match(challenge, /scope="plants:write"/);
    await expectError(res, 403);
    await expectError(await del(s, '404', s.token.read), 403);
    await expectError(await del(s, 'abc', s.token.read), 403);
    assert.deepEqual(await plantOf(await call(s, '/plants/1')), { id: '1', name: 'fern' });
  });

  await t.test('no token is 401 with the Bearer challenge, and the plant stays', async () => {
    for (const id of ['1', 'abc']) {
      const res = await del(s, id, null);
      assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="plant-store"');
      await expectError(res, 401, id);
    }
    assert.deepEqual(await plantOf(await call(s, '/plants/1')), { id: '1', name: 'fern' });
  });

  await t.test('a write-only token deletes (204); one with both scopes too', async () => {
    assert.equal((await del(s, '1', s.token.write)).status, 204);
    await createPlant(s, { id: '1', name: 'fern' });
    assert.equal((await del(s, '1', s.token.all)).status, 204);
    await expectError(await call(s, '/plants/1'), 404);
  });
});
