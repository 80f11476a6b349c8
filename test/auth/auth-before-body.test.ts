// Authentication runs before the body is read or parsed: an anonymous (or badly authenticated) client gets
// 401 whatever it sent, and learns nothing from body validation. Each case is checked against a write token
// too, to show the body would otherwise have been refused with 400, 413 or 415.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { errorOf, startApp, type TestApp } from '../helpers/app.js';
import { parseRawResponse, rawHttp } from '../helpers/raw-request.js';

const BODY_LIMIT = 1024;

interface Case {
  label: string;
  contentType?: string;
  body: string;
  /** What a client with a valid write token gets for the same request. */
  authenticated: number;
}

const CASES: Case[] = [
  { label: 'malformed JSON', contentType: 'application/json', body: '{"id": 1, "name": ', authenticated: 400 },
  { label: 'schema-invalid JSON', contentType: 'application/json', body: '{"id": "one"}', authenticated: 400 },
  { label: 'not an object', contentType: 'application/json', body: '[1,2,3]', authenticated: 400 },
  { label: 'empty body', contentType: 'application/json', body: '', authenticated: 400 },
  { label: 'text/plain', contentType: 'text/plain', body: 'hello', authenticated: 415 },
  { label: 'no content type', body: '{"id":1,"name":"fern"}', authenticated: 415 },
  { label: 'oversize body', contentType: 'application/json', body: JSON.stringify({ id: 1, name: 'x'.repeat(BODY_LIMIT * 4) }), authenticated: 413 },
];

function send(s: TestApp, c: Case, authorization?: string): Promise<Response> {
  const headers: Record<string, string> = {};
  if (c.contentType) headers['content-type'] = c.contentType;
  if (authorization) headers.authorization = authorization;
  // A Blob body with no type of its own: fetch adds no Content-Type unless given.
  return fetch(`${s.url}/plants`, { method: 'POST', headers, body: new Blob([c.body]) });
}

test('the write token sees the body errors that anonymous clients must not see', async (t) => {
  const s = await startApp(t, { config: { bodyLimit: BODY_LIMIT } });
  for (const c of CASES) {
    const res = await send(s, c, `Bearer ${s.token.write}`);
    assert.equal(res.status, c.authenticated, c.label);
    await errorOf(res);
  }
});

test('an anonymous request gets 401 whatever its body, never 400, 413 or 415', async (t) => {
  const s = await startApp(t, { config: { bodyLimit: BODY_LIMIT } });
  for (const c of CASES) {
    const res = await send(s, c);
    assert.equal(res.status, 401, c.label);
    assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="plant-store"', c.label);
    await errorOf(res);
  }
});

test('an unknown token gets 401 invalid_token whatever its body', async (t) => {
  const s = await startApp(t, { config: { bodyLimit: BODY_LIMIT, authFailuresPerMinute: 1000 } });
  for (const c of CASES) {
    const res = await send(s, c, `Bearer pst_${'Q'.repeat(43)}`);
    assert.equal(res.status, 401, c.label);
    assert.match(res.headers.get('www-authenticate') ?? '', /error="invalid_token"/, c.label);
    await errorOf(res);
  }
});

test('a token without the scope gets 403 whatever its body', async (t) => {
  const s = await startApp(t, { config: { bodyLimit: BODY_LIMIT } });
  for (const c of CASES) {
    const res = await send(s, c, `Bearer ${s.token.read}`);
    assert.equal(res.status, 403, c.label);
    await errorOf(res);
  }
});

test('an anonymous request announcing a body over the limit gets 401, before any body byte is sent', async (t) => {
  const s = await startApp(t, { config: { bodyLimit: BODY_LIMIT } });
  // Headers only: the server must answer without waiting for the (oversize) body.
  const head = `POST /plants HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${10 * 1024 * 1024}\r\n\r\n`;
  const started = Date.now();
  const raw = await rawHttp(s.port, head, 300);
  const res = parseRawResponse(raw);
  assert.equal(res.status, 401, raw);
  assert.equal(res.headers['www-authenticate'], 'Bearer realm="plant-store"');
  assert.ok(Date.now() - started < 1_000 + 300 * 4, 'the answer waited for the body');
  assert.deepEqual(JSON.parse(res.body.slice(0, Number(res.headers['content-length']))).error, 401);
});

test('an anonymous request with a body that never arrives gets 401 at once', async (t) => {
  const s = await startApp(t);
  const head = 'POST /plants HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n';
  const res = parseRawResponse(await rawHttp(s.port, head, 300));
  assert.equal(res.status, 401);
  assert.equal(res.headers['www-authenticate'], 'Bearer realm="plant-store"');
});
