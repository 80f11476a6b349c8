// Answers to authenticated operations carry Cache-Control: no-store (RFC 9111), successes and refusals alike,
// the 201 holding a webhook's signing secret first of all; public operations leave caching to their own rules.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startApp } from '../helpers/app.js';

test('every answer to an authenticated operation says Cache-Control: no-store; public ones do not', async (t) => {
  const s = await startApp(t);
  const manage = (await s.tokens.create({ name: 'hooks', scopes: ['webhooks:manage', 'plants:read'] })).secret;
  const call = (path: string, token?: string, init: RequestInit = {}) =>
    fetch(`${s.url}${path}`, { ...init, headers: { ...(token && { authorization: `Bearer ${token}` }), 'content-type': 'application/json', ...init.headers } });

  const created = await call('/webhooks', manage, { method: 'POST', body: JSON.stringify({ url: 'https://1.1.1.1/hooks' }) });
  assert.equal(created.status, 201, await created.clone().text());
  assert.match(((await created.json()) as { secret: string }).secret, /^whsec_/);
  assert.equal(created.headers.get('cache-control'), 'no-store', 'the answer carrying the signing secret');

  const answers: [string, Response, number][] = [
    ['POST /plants', await s.postPlant({ id: 1, name: 'fern' }), 200],
    ['GET /plants', await call('/plants', s.token.read), 200],
    ['GET /plants/1', await call('/plants/1', s.token.read), 200],
    ['GET /plants/2 (404)', await call('/plants/2', s.token.read), 404],
    ['GET /webhooks', await call('/webhooks', manage), 200],
    ['GET /metrics', await call('/metrics', s.token.read), 403],
    ['GET /plants without a token (401)', await call('/plants'), 401],
    ['GET /plants with an unknown token (401)', await call('/plants', 'pst_nope'), 401],
    ['POST /plants with a read-only token (403)', await call('/plants', s.token.read, { method: 'POST', body: '{"id":3,"name":"x"}' }), 403],
  ];
  for (const [what, res, status] of answers) {
    assert.equal(res.status, status, what);
    assert.equal(res.headers.get('cache-control'), 'no-store', what);
  }
  for (const path of ['/healthz', '/openapi.json']) {
    const res = await call(path);
    assert.equal(res.status, 200, path);
    assert.notEqual(res.headers.get('cache-control'), 'no-store', path);
  }
});
