// An operation that declares no request body refuses one with 400, before reading it, rather than ignoring it:
// a DELETE with a body, or a retry sent with JSON, is a client that meant something the service does not do.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { errorOf, startApp } from '../helpers/app.js';
import { storedPlant } from '../helpers/stored-plant.js';

test('a body sent to an operation that takes none is 400 and nothing is done; an empty one is fine', async (t) => {
  const s = await startApp(t);
  assert.equal((await s.postPlant('{"id": 1, "name": "kept"}')).status, 200);
  const hooks = (await s.tokens.create({ name: 'hooks', scopes: ['webhooks:manage'] })).secret;
  const auth = { authorization: `Bearer ${s.token.all}`, 'content-type': 'application/json' };
  const refused: Array<[string, string, string]> = [
    ['DELETE', '/plants/1', '{"id": 1}'],
    ['POST', '/webhooks/wh_nope/deliveries/dlv_nope/retry', '{"now": true}'],
  ];
  for (const [method, path, body] of refused) {
    const headers = path.startsWith('/webhooks') ? { ...auth, authorization: `Bearer ${hooks}` } : auth;
    const res = await fetch(`${s.url}${path}`, { method, headers, body });
    assert.equal(res.status, 400, `${method} ${path}`);
    assert.deepEqual(await errorOf(res), { error: 400, message: 'This operation takes no request body; send none.' });
  }
  assert.deepEqual(await storedPlant(s.store, 1n), { id: 1n, name: 'kept' });
  // Without a token the answer is still 401: authentication comes first.
  const anonymous = await fetch(`${s.url}/plants/1`, { method: 'DELETE', headers: { 'content-type': 'application/json' }, body: '{}' });
  assert.equal(anonymous.status, 401);
  await anonymous.arrayBuffer();
  // Content-Length: 0 is no body.
  const deleted = await fetch(`${s.url}/plants/1`, { method: 'DELETE', headers: { authorization: auth.authorization, 'content-length': '0' } });
  assert.equal(deleted.status, 204);
  assert.equal(await storedPlant(s.store, 1n), undefined);
});
