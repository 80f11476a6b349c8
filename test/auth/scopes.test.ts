// Scopes: POST /plants needs plants:write; a valid token without it is 403 insufficient_scope (RFC 6750 3.1).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { errorOf, startApp } from '../helpers/app.js';
import { postWith } from '../helpers/requests.js';
import { storedPlant } from '../helpers/stored-plant.js';

test('a token with only plants:read gets 403 insufficient_scope naming plants:write, and nothing is stored', async (t) => {
  const s = await startApp(t);
  const res = await postWith(s, s.token.read, { id: 1, name: 'fern' });
  assert.equal(res.status, 403);
  const challenge = res.headers.get('www-authenticate') ?? '';
  assert.ok(challenge.startsWith('Bearer realm="plant-store", '), challenge);
  assert.match(challenge, /(^|[ ,])error="insufficient_scope"/);
  assert.match(challenge, /(^|[ ,])scope="plants:write"/);
  const body = await errorOf(res);
  assert.match(body.message, /plants:write/);
  assert.equal(await storedPlant(s.store, 1n), undefined);
});

test('a token with plants:write, alone or with plants:read, creates the plant', async (t) => {
  const s = await startApp(t);
  for (const [i, token] of [s.token.write, s.token.all].entries()) {
    const res = await postWith(s, token, { id: i + 1, name: 'fern' });
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { name: 'fern' });
    assert.deepEqual(await storedPlant(s.store, BigInt(i + 1)), { id: BigInt(i + 1), name: 'fern' });
  }
});

test('scopes are those the token was created with, read from the store', async (t) => {
  const s = await startApp(t);
  const read = await s.tokens.create({ name: 'reader', scopes: ['plants:read'] });
  const write = await s.tokens.create({ name: 'writer', scopes: ['plants:write'] });
  assert.equal((await postWith(s, read.secret, { id: 7, name: 'a' })).status, 403);
  assert.equal((await postWith(s, write.secret, { id: 7, name: 'a' })).status, 200);
});

test('the scope check answers before the body is validated', async (t) => {
  const s = await startApp(t);
  const res = await fetch(`${s.url}/plants`, {
    method: 'POST',
    headers: { authorization: `Bearer ${s.token.read}`, 'content-type': 'application/json' },
    body: '{"id": "not a number", ',
  });
  assert.equal(res.status, 403);
  assert.match(res.headers.get('www-authenticate') ?? '', /error="insufficient_scope"/);
  await errorOf(res);
});

test('403s for a missing scope do not count as authentication failures for the throttle', async (t) => {
  const s = await startApp(t, { config: { authFailuresPerMinute: 2 } });
  for (let i = 0; i < 6; i++) assert.equal((await postWith(s, s.token.read, { id: 1, name: 'fern' })).status, 403);
  // Six 403s from this address did not count as authentication failures: an unknown token is a plain 401.
  assert.equal((await postWith(s, `pst_${'Q'.repeat(43)}`, { id: 1, name: 'fern' })).status, 401);
});
