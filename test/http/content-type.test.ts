// The request body must be application/json in UTF-8, uncompressed; anything else is 415 before parsing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { errorOf, startApp } from '../helpers/app.js';
import { postBytes } from './support.js';
import { storedPlant } from '../helpers/stored-plant.js';

const BODY = '{"id": 1, "name": "fern"}';

test('a Content-Type other than application/json is 415', async (t) => {
  const s = await startApp(t);
  const types = [
    'text/plain',
    'text/plain; charset=utf-8',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x',
    'application/xml',
    'text/json',
    'application/jsonx',
    'application/json-patch+json',
    'application/octet-stream',
    'application/json; charset=latin1',
    'application/json; charset=iso-8859-1',
    'application/json; charset=utf-16',
    'application/json; charset="windows-1252"',
  ];
  for (const type of types) {
    await t.test(type, async () => {
      const res = await postBytes(s, BODY, { 'content-type': type });
      assert.equal(res.status, 415);
      await errorOf(res);
    });
  }
  await t.test('no Content-Type with a body', async () => {
    // A Uint8Array body makes fetch send no Content-Type of its own.
    const res = await postBytes(s, new TextEncoder().encode(BODY));
    assert.equal(res.status, 415);
    await errorOf(res);
  });
  await t.test('a compressed body (Content-Encoding gzip) is 415, not a confusing UTF-8 error', async () => {
    const res = await postBytes(s, BODY, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
    assert.equal(res.status, 415);
    assert.equal(res.headers.get('accept-encoding'), 'identity');
    assert.match((await errorOf(res)).message, /Content-Encoding/);
  });
  await t.test('a 415 stores nothing, even when the body is a valid NewPlant', async () => {
    assert.equal(await s.store.countPlants(), 0);
  });
});

test('application/json is accepted with a UTF-8 charset, in any case', async (t) => {
  const s = await startApp(t);
  const types = [
    'application/json',
    'application/json; charset=utf-8',
    'application/json;charset=UTF-8',
    'application/json; charset="utf-8"',
    'application/json; charset=utf8',
    'Application/JSON',
  ];
  let id = 0;
  for (const type of types) {
    await t.test(type, async () => {
      id++;
      const res = await postBytes(s, `{"id": ${id}, "name": "t${id}"}`, { 'content-type': type });
      assert.equal(res.status, 200);
      assert.deepEqual(await storedPlant(s.store, BigInt(id)), { id: BigInt(id), name: `t${id}` });
    });
  }
  await t.test('Content-Encoding identity is no encoding', async () => {
    const res = await postBytes(s, '{"id": 100, "name": "plain"}', { 'content-type': 'application/json', 'content-encoding': 'identity' });
    assert.equal(res.status, 200);
  });
});
