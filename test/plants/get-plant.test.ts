// GET /plants/{id}: 200 {id, name, tag?} with the id digit for digit; 404 Error when absent; 400 for an id
// that is not a canonical int64 decimal; plants:read scope; 405 for methods /plants/{id} does not have.
// The digit-for-digit id text, path spellings (percent-encoding, -0, +1), ids that are not int64s, HEAD
// and the methods the document does not have are checked raw; the rest goes through the typed client.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { NewPlant, PlantStoreClient } from '@plant-store/client';
import { startApp } from '../helpers/app.js';
import { clientError, clientFor } from '../helpers/client.js';
import { ABOVE_2_53, BAD_IDS, INT64_MAX, INT64_MIN, call, createPlant, expectError, label, plantOf, type PlantText } from './read-support.js';

function get(client: PlantStoreClient, id: bigint) {
  return client.GET('/plants/{id}', { params: { path: { id } } });
}

/** GET /plants/{id} through the client: asserts 200 JSON and returns the plant. */
async function read(client: PlantStoreClient, id: bigint): Promise<NewPlant> {
  const { data, response } = await get(client, id);
  assert.equal(response.status, 200, `GET ${id}`);
  assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
  return data!;
}

test('GET /plants/{id}', async (t) => {
  const s = await startApp(t);
  const plants: PlantText[] = [
    { id: '1', name: 'fern', tag: 'green' },
    { id: '2', name: 'moss' },
    { id: '0', name: 'zero', tag: '' },
    { id: '-7', name: 'negative', tag: 'neg' },
    { id: INT64_MAX, name: 'the largest', tag: 'edge' },
    { id: INT64_MIN, name: 'the smallest', tag: 'edge' },
    { id: ABOVE_2_53, name: '2^53 + 1' },
    // Shares a double with 2^53 + 1: a lossy lookup would return one for the other.
    { id: '9007199254740992', name: '2^53' },
    { id: '9223372036854775806', name: 'max - 1' },
    { id: '-9223372036854775807', name: 'min + 1' },
    { id: '3', name: 'ünïcødé 🌿 "q" \\ </script>', tag: 'grün 🌱' },
  ];
  for (const p of plants) await createPlant(s, p);
  const reader = clientFor(s, s.token.read);

  await t.test('200 with exactly {id, name, tag?}, the id digit for digit', async () => {
    for (const p of plants) {
      const res = await call(s, `/plants/${p.id}`);
      const text = await res.clone().text();
      assert.deepEqual(await plantOf(res), p, `plant ${p.id}`);
      // The raw text has the id as a bare JSON number, exactly these digits.
      assert.match(text, new RegExp(`"id":${p.id}[,}]`), `raw id of ${p.id}`);
    }
  });

  await t.test('tag is absent (not null, not "") when the plant has none; "" is kept', async () => {
    const text = await (await call(s, '/plants/2')).text();
    assert.doesNotMatch(text, /"tag"/);
    assert.deepEqual(await read(reader, 0n), { id: 0n, name: 'zero', tag: '' });
  });

  await t.test('the int64 ends and 2^53 + 1 exactly', async () => {
    for (const [id, name] of [[INT64_MAX, 'the largest'], [INT64_MIN, 'the smallest'], [ABOVE_2_53, '2^53 + 1'], ['9007199254740992', '2^53']] as const) {
      const text = await (await call(s, `/plants/${id}`)).text();
      assert.equal([...text.matchAll(/"id":(-?\d+)/g)].map((m) => m[1]).join(), id);
      assert.match(text, new RegExp(`"name":"${name.replace(/[\^+]/g, '\\$&')}"`));
    }
  });

  await t.test('a percent-encoded id is the same id', async () => {
    assert.deepEqual(await plantOf(await call(s, '/plants/%31')), plants[0]);
    assert.deepEqual(await plantOf(await call(s, '/plants/%2D7')), plants[3]);
  });

  await t.test('-0 is 400 like every non-canonical id; 0 is the id 0', async () => {
    for (const path of ['/plants/-0', '/plants/%2D0']) {
      const res = await call(s, path);
      assert.equal(res.status, 400, path);
      await res.arrayBuffer();
    }
    assert.deepEqual(await plantOf(await call(s, '/plants/0')), { id: '0', name: 'zero', tag: '' });
  });

  await t.test('an absent id is 404 Error', async () => {
    for (const id of [4n, -1n, 42n, 9223372036854775805n, -9223372036854775806n, 9007199254740994n]) {
      clientError(await get(reader, id), 404, String(id));
    }
  });

  await t.test('many GETs at once, the same id several times, some absent: each is answered with its own plant or 404', async () => {
    const absent = ['4', '-1', '9007199254740994', '9223372036854775805'];
    const ids = [...plants.map((p) => p.id), ...absent, ...plants.map((p) => p.id), ABOVE_2_53, ABOVE_2_53, '9007199254740992', absent[0]!];
    // Several rounds, each sent all at once; after the first, over open connections, so that requests reach
    // the server together rather than one new connection at a time.
    for (let round = 0; round < 4; round++) {
      const order = ids.map((_, i) => ids[(i * 7 + round) % ids.length]!);
      const answers = await Promise.all(order.map((id) => call(s, `/plants/${id}`)));
      for (const [i, res] of answers.entries()) {
        const id = order[i]!;
        const plant = plants.find((p) => p.id === id);
        if (plant) assert.deepEqual(await plantOf(res), plant, `GET ${id}`);
        else assert.equal((await expectError(res, 404)).message, `No plant with id ${id}.`);
      }
    }
  });

  for (const id of BAD_IDS) {
    await t.test(`id ${label(id)} is 400 Error`, async () => {
      await expectError(await call(s, `/plants/${encodeURIComponent(id)}`), 400, id);
    });
  }

  await t.test('an unencoded + is 400 too; a missing id names no plant: /plants/ is 404', async () => {
    await expectError(await call(s, '/plants/+1'), 400, '+1');
    await expectError(await call(s, '/plants/'), 404, 'empty');
  });

  await t.test('HEAD answers like GET without a body', async () => {
    const res = await call(s, `/plants/${INT64_MAX}`, { method: 'HEAD' });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    assert.equal(await res.text(), '');
    assert.equal((await call(s, '/plants/4', { method: 'HEAD' })).status, 404);
  });
});

test('GET /plants/{id}: scopes and methods', async (t) => {
  const s = await startApp(t);
  await createPlant(s, { id: '1', name: 'fern' });
  const reader = clientFor(s, s.token.read);

  await t.test('a read-only token reads (200), as does one with both scopes', async () => {
    assert.deepEqual(await read(reader, 1n), { id: 1n, name: 'fern' });
    assert.deepEqual(await read(clientFor(s, s.token.all), 1n), { id: 1n, name: 'fern' });
  });

  await t.test('a write-only token is 403 insufficient_scope naming plants:read', async () => {
    const writer = clientFor(s, s.token.write);
    const result = await get(writer, 1n);
    const challenge = result.response.headers.get('www-authenticate') ?? '';
    assert.match(challenge, /^Bearer realm="plant-store"/);
    assert.match(challenge, /error="insufficient_scope"/);
    assert.match(challenge, /scope="plants:read"/);
    clientError(result, 403);
    // Absent or malformed ids do not reveal anything past the scope check either (abc raw: not an int64).
    clientError(await get(writer, 99n), 403);
    await expectError(await call(s, '/plants/abc', { token: s.token.write }), 403);
  });

  await t.test('no token is 401 with the Bearer challenge, whatever the id', async () => {
    const anonymous = clientFor(s);
    for (const id of [1n, 99n]) {
      const result = await get(anonymous, id);
      assert.equal(result.response.headers.get('www-authenticate'), 'Bearer realm="plant-store"');
      clientError(result, 401, String(id));
    }
    // Raw: ids that are not int64s.
    for (const id of ['abc', '9223372036854775808']) {
      const res = await call(s, `/plants/${id}`, { token: null });
      assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="plant-store"');
      await expectError(res, 401, id);
    }
  });

  await t.test('POST and OPTIONS on /plants/{id} are 405 with Allow: DELETE, GET, HEAD, PATCH, PUT', async () => {
    for (const method of ['POST', 'OPTIONS']) {
      for (const id of ['1', INT64_MAX, 'abc']) {
        const res = await fetch(`${s.url}/plants/${id}`, {
          method,
          headers: { authorization: `Bearer ${s.token.all}`, 'content-type': 'application/json' },
          ...(method !== 'OPTIONS' && { body: '{"id": 1, "name": "changed"}' }),
        });
        assert.equal(res.headers.get('allow'), 'DELETE, GET, HEAD, PATCH, PUT', `${method} ${id}`);
        await expectError(res, 405, `${method} ${id}`);
      }
    }
    assert.deepEqual(await read(reader, 1n), { id: 1n, name: 'fern' }, 'nothing changed');
  });
});
