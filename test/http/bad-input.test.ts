// Bodies that are not a JSON object, not JSON at all, or absent: 400 Error, nothing stored.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { errorOf, startApp } from '../helpers/app.js';
import { postBytes } from './support.js';

test('a body that is JSON but not an object is 400', async (t) => {
  const s = await startApp(t);
  for (const body of ['[]', '[{"id": 1, "name": "fern"}]', '"fern"', '""', '1', '12345678901234567890', '-1.5', 'null', 'true', 'false', '[12345678901234567890]']) {
    await t.test(body, async () => {
      const res = await s.postPlant(body);
      assert.equal(res.status, 400);
      const err = await errorOf(res);
      assert.match(err.message, /object/);
    });
  }
  await t.test('nothing stored', async () => assert.equal(await s.store.countPlants(), 0));
});

test('malformed JSON is 400', async (t) => {
  const s = await startApp(t);
  const bodies = [
    '{"id": 1, "name": "fern"',
    '{"id": 1,',
    '{',
    '}',
    '{id: 1, name: "fern"}',
    "{'id': 1, 'name': 'fern'}",
    '{"id": 1, "name": "fern",}',
    '{"id": 1, "name": "fern"}}',
    '{"id": 1, "name": "fern"} {"id": 2, "name": "ivy"}',
    '{"id": 1, "name": "fern"} x',
    '{"id": 1 "name": "fern"}',
    '{"id": 1, "name": "fern" // comment\n}',
    '{"id": NaN, "name": "fern"}',
    '{"id": Infinity, "name": "fern"}',
    '{"id": -Infinity, "name": "fern"}',
    '{"id": +1, "name": "fern"}',
    '{"id": 01, "name": "fern"}',
    '{"id": 1., "name": "fern"}',
    '{"id": .5, "name": "fern"}',
    '{"id": 0x10, "name": "fern"}',
    '{"id": 1e, "name": "fern"}',
    '{"id": -, "name": "fern"}',
    '{"id": 1, "name": "fe\nrn"}',
    '{"id": 1, "name": "fern\\x41"}',
    '{"id": 1, "name": "\\u12"}',
    '{"id": 1, "name": undefined}',
    '\ufeff{"id": 1, "name": "fern"}',
    // Long literals take the lossless path; its rewriting must not make invalid JSON valid.
    '{"id": 01234567890123456, "name": "fern"}',
    '{"id": -01234567890123456, "name": "fern"}',
    '{"id": 00000000000000001e3, "name": "fern"}',
    '{"id": +12345678901234567, "name": "fern"}',
    '{"id": 12345678901234567., "name": "fern"}',
    '{"id": .12345678901234567, "name": "fern"}',
    '{"id": 1.2345678901234567e, "name": "fern"}',
    '{"id": 12345678901234567 8, "name": "fern"}',
    '{12345678901234567: 1, "id": 1, "name": "fern"}',
    '{"id": 1, "name": "fern", 12345678901234567890: "x"}',
    '[1, 12345678901234567890',
  ];
  for (const body of bodies) {
    await t.test(JSON.stringify(body), async () => {
      const res = await s.postPlant(body);
      assert.equal(res.status, 400);
      const err = await errorOf(res);
      assert.match(err.message, /JSON/);
    });
  }
  await t.test('nothing stored', async () => assert.equal(await s.store.countPlants(), 0));
});

test('the malformed-JSON message describes the client\'s own text, with or without long numbers', async (t) => {
  const s = await startApp(t);
  for (const body of ['x12345678901234567', '[,12345678901234567]', '{"a": 1, "b": 12345678901234567 x}', 'tru 12345678901234567890', '{"id": 1 2}']) {
    await t.test(JSON.stringify(body), async () => {
      let expected = '';
      try {
        JSON.parse(body);
      } catch (err) {
        expected = (err as Error).message;
      }
      assert.ok(expected, 'the body is really malformed');
      const res = await s.postPlant(body);
      assert.equal(res.status, 400);
      const { message } = await errorOf(res);
      // Neither the internal marker (NUL escape) nor positions shifted by it reach the client.
      assert.doesNotMatch(message, /\\u0000|\u0000/);
      assert.equal(message, `The request body is not valid JSON: ${expected}`.slice(0, 'The request body is not valid JSON'.length + 200));
    });
  }
});

test('an empty, whitespace-only or absent body is 400', async (t) => {
  const s = await startApp(t);
  await t.test('empty body with Content-Type application/json', async () => {
    const res = await postBytes(s, '', { 'content-type': 'application/json' });
    assert.equal(res.status, 400);
    await errorOf(res);
  });
  await t.test('no body at all, with Content-Type application/json', async () => {
    const res = await postBytes(s, undefined, { 'content-type': 'application/json' });
    assert.equal(res.status, 400);
    await errorOf(res);
  });
  await t.test('no body and no Content-Type', async () => {
    const res = await postBytes(s, undefined);
    assert.equal(res.status, 400);
    assert.equal((await errorOf(res)).message, 'A JSON request body is required.');
  });
  for (const ws of [' ', '\n', '\r\n\t  ', ' '.repeat(1000)]) {
    await t.test(`whitespace only ${JSON.stringify(ws.slice(0, 8))}`, async () => {
      const res = await s.postPlant(ws);
      assert.equal(res.status, 400);
      await errorOf(res);
    });
  }
  await t.test('nothing stored', async () => assert.equal(await s.store.countPlants(), 0));
});

test('a member named twice in a body is 400 naming it and where (I-JSON), on every operation with a body; nothing is stored', async (t) => {
  const s = await startApp(t);
  const { secret } = await s.tokens.create({ name: 'i-json', scopes: ['plants:read', 'plants:write', 'webhooks:manage'] });
  const auth = { authorization: `Bearer ${secret}` };
  const cases: [string, string, string, string, RegExp][] = [
    ['POST', '/plants', 'application/json', '{"id":5,"id":6,"name":"dup"}', /member 'id' twice: member names must be unique \(I-JSON, RFC 7493\)/],
    ['POST', '/plants', 'application/json', '{"id":5,"name":"a","\\u006eame":"b"}', /member 'name' twice/],
    ['POST', '/plants', 'application/json', '{"id":12345678901234567890123,"name":"a","id":1}', /member 'id' twice/],
    ['PUT', '/plants/7', 'application/json', '{"name":"a","tag":"x","tag":"y"}', /member 'tag' twice/],
    ['PATCH', '/plants/7', 'application/merge-patch+json', '{"name":"a","name":null}', /member 'name' twice/],
    ['POST', '/webhooks', 'application/json', '{"url":"https://example.com/h","events":["newPlant"],"url":"https://example.com/i"}', /member 'url' twice/],
    ['POST', '/plants', 'application/json', '{"id":9,"name":"x","extra":{"a":1,"a":2}}', /member 'a' twice in the object at \/extra/],
  ];
  for (const [method, path, type, body, message] of cases) {
    const res = await fetch(`${s.url}${path}`, { method, headers: { ...auth, 'content-type': type }, body });
    assert.equal(res.status, 400, `${method} ${path} ${body}`);
    assert.match((await errorOf(res)).message, message, body);
  }
  assert.equal(await s.store.countPlants(), 0);
  assert.equal((await (await fetch(`${s.url}/webhooks`, { headers: auth })).json() as unknown[]).length, 0);
  // A name repeated inside a string is no repeat.
  const fine = await fetch(`${s.url}/plants`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{"id":5,"name":"{\\"id\\":1,\\"id\\":2}"}' });
  assert.equal(fine.status, 200, await fine.text());
});
