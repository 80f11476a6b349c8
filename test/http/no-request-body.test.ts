// An operation that declares no request body refuses one with 400, before reading it, rather than ignoring it:
// a DELETE with a body, or a retry sent with JSON, is a client that meant something the service does not do.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { errorOf, startApp } from '../helpers/app.js';
import { storedPlant } from '../helpers/stored-plant.js';
import { parseRawResponse, rawHttp } from '../helpers/raw-request.js';

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

test('a request without content is not refused for its Content-Type; an operation that takes a body still wants one', async (t) => {
  const s = await startApp(t);
  for (const id of [1, 2, 3]) assert.equal((await s.postPlant(`{"id": ${id}, "name": "plant ${id}"}`)).status, 200);
  const auth = `Bearer ${s.token.all}`;
  // fetch: a DELETE with Content-Type: application/json and no body (many client libraries set the type on every request).
  const deleted = await fetch(`${s.url}/plants/1`, { method: 'DELETE', headers: { authorization: auth, 'content-type': 'application/json' } });
  assert.equal(deleted.status, 204);
  assert.equal(await storedPlant(s.store, 1n), undefined);
  // On the wire: Content-Length 0, then no Content-Length at all (RFC 9112: no content), with JSON, another type, or one that does not parse.
  const raw = async (request: string) => parseRawResponse(await rawHttp(s.port, request, { halfClose: true }));
  for (const [id, headers] of [[2, 'Content-Type: application/json\r\nContent-Length: 0\r\n'], [3, 'Content-Type: text/plain\r\n']] as const) {
    const res = await raw(`DELETE /plants/${id} HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\n${headers}Connection: close\r\n\r\n`);
    assert.equal(res.status, 204, `DELETE /plants/${id}: ${res.body}`);
    assert.equal(await storedPlant(s.store, BigInt(id)), undefined);
  }
  const ticket = await raw(`POST /events/tickets HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\nContent-Type: nonsense\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
  assert.equal(ticket.status, 201, ticket.body);
  // Content still is refused, whatever its type.
  const withBody = await fetch(`${s.url}/events/tickets`, { method: 'POST', headers: { authorization: auth, 'content-type': 'application/json' }, body: '{}' });
  assert.equal(withBody.status, 400);
  assert.deepEqual(await errorOf(withBody), { error: 400, message: 'This operation takes no request body; send none.' });
  // An operation that takes a body: an empty one is the clear 400 it was.
  const empty = await fetch(`${s.url}/plants`, { method: 'POST', headers: { authorization: auth, 'content-type': 'application/json' }, body: '' });
  assert.equal(empty.status, 400);
  assert.deepEqual(await errorOf(empty), { error: 400, message: 'The request body is empty; send a JSON object.' });
});
