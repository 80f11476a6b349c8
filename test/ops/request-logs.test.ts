// Structured JSON logs of the real server: one line per request with its request id (an incoming
// X-Request-Id is honoured and echoed), and never a token or a request body.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnServer } from '../helpers/app.js';
import { rawHttp } from '../helpers/raw-request.js';
import { eventually } from '../helpers/sleep.js';
import { databaseWithToken } from '../helpers/cli.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

test('request ids are echoed and logged; logs are JSON lines without tokens or bodies', async (t) => {
  const { databaseUrl, token } = await databaseWithToken(t);
  const server = await spawnServer(t, { DATABASE_URL: databaseUrl, BOOTSTRAP_TOKEN: 'false' });

  const given = await fetch(`${server.url}/healthz`, { headers: { 'x-request-id': 'trace-abc.123' } });
  assert.equal(given.headers.get('x-request-id'), 'trace-abc.123');

  const made = await fetch(`${server.url}/healthz`);
  const madeId = made.headers.get('x-request-id') ?? '';
  assert.match(madeId, UUID);

  for (const bad of ['has a space', 'x'.repeat(300), 'semi;colon']) {
    const res = await fetch(`${server.url}/healthz`, { headers: { 'x-request-id': bad } });
    assert.match(res.headers.get('x-request-id') ?? '', UUID, `${JSON.stringify(bad.slice(0, 20))} was not replaced`);
  }

  const marker = `secret-plant-name-${Date.now()}`;
  const created = await fetch(`${server.url}/plants`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'x-request-id': 'create-1' },
    body: JSON.stringify({ id: 1, name: marker, tag: marker }),
  });
  assert.equal(created.status, 200);
  assert.equal(created.headers.get('x-request-id'), 'create-1');
  const wrongToken = `pst_${'A'.repeat(43)}`;
  const denied = await fetch(`${server.url}/plants`, {
    method: 'POST',
    headers: { authorization: `Bearer ${wrongToken}`, 'content-type': 'application/json', 'x-request-id': 'denied-1' },
    body: JSON.stringify({ id: 2, name: marker }),
  });
  assert.equal(denied.status, 401);
  const invalid = await fetch(`${server.url}/plants`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'x-request-id': 'invalid-1' },
    body: JSON.stringify({ id: 'not a number', name: marker }),
  });
  assert.equal(invalid.status, 400);
  // The child writes its log when it will: wait for the last request's line rather than a fixed time.
  await eventually(() => server.stdout().split('\n').some((l) => l.includes('"invalid-1"') && l.includes('request completed')), 'the access line of invalid-1');

  const out = server.stdout();
  const lines = out.split('\n').filter((l) => l.trim() !== '');
  const entries = lines.map((l) => {
    try {
      return JSON.parse(l) as Record<string, unknown>;
    } catch {
      throw new Error(`not a JSON log line: ${l}`);
    }
  });
  const completed = (id: string) => entries.find((e) => e.reqId === id && e.msg === 'request completed');
  for (const [id, status] of [['trace-abc.123', 200], [madeId, 200], ['create-1', 200], ['denied-1', 401], ['invalid-1', 400]] as const) {
    const entry = completed(id);
    assert.ok(entry, `no "request completed" line for ${id}`);
    assert.equal(entry.statusCode, status);
  }
  assert.ok(!out.includes(token), 'a token reached the log');
  assert.ok(!out.includes(token.slice(4, 20)), 'part of a token reached the log');
  assert.ok(!out.includes(wrongToken), 'a rejected token reached the log');
  assert.ok(!out.includes(marker), 'a request body reached the log');
});

test('the access line of every error answer names its catalogue code; a success names none', async (t) => {
  const { databaseUrl, token } = await databaseWithToken(t);
  const server = await spawnServer(t, { DATABASE_URL: databaseUrl, BOOTSTRAP_TOKEN: 'false' });
  const auth = { authorization: `Bearer ${token}` };
  const json = { ...auth, 'content-type': 'application/json' };
  const cases: [id: string, path: string, init: RequestInit, status: number, code: string | undefined][] = [
    ['ok', '/plants', { headers: auth }, 200, undefined],
    ['no-token', '/plants', {}, 401, 'UNAUTHENTICATED'],
    ['bad-token', '/plants', { headers: { authorization: `Bearer pst_${'B'.repeat(43)}` } }, 401, 'INVALID_TOKEN'],
    ['scope', '/metrics', { headers: auth }, 403, 'INSUFFICIENT_SCOPE'],
    ['no-plant', '/plants/424242', { headers: auth }, 404, 'PLANT_NOT_FOUND'],
    ['no-route', '/nowhere', {}, 404, 'ROUTE_NOT_FOUND'],
    ['method', '/plants', { method: 'PUT', headers: auth }, 405, 'METHOD_NOT_ALLOWED'],
    ['schema', '/plants', { method: 'POST', headers: json, body: '{"id": "x", "name": "fern"}' }, 400, 'VALIDATION_FAILED'],
    ['not-json', '/plants', { method: 'POST', headers: json, body: '{"id": 1,' }, 400, 'BODY_MALFORMED'],
    ['media', '/plants', { method: 'POST', headers: { ...auth, 'content-type': 'text/plain' }, body: 'fern' }, 415, 'UNSUPPORTED_MEDIA_TYPE'],
    ['bad-url', '/plants/%zz', { headers: auth }, 400, 'BAD_URL'],
  ];
  for (const [id, path, init, status, code] of cases) {
    const res = await fetch(`${server.url}${path}`, { ...init, headers: { ...(init.headers as Record<string, string>), 'x-request-id': id } });
    assert.equal(res.status, status, `${id}: ${await res.text()}`);
  }
  // An unsupported Expect is answered through Fastify: its line has a request id like any other.
  const port = Number(new URL(server.url).port);
  assert.match(await rawHttp(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nX-Request-Id: expect-1\r\nConnection: close\r\n\r\n', 200), /^HTTP\/1\.1 417 /);
  // Answered on the bare connection, before Fastify sees a request: still one line with the code.
  assert.match(await rawHttp(port, 'GARBAGE\r\n\r\n', 200), /^HTTP\/1\.1 400 /);
  await eventually(() => server.stdout().includes('"code":"BAD_HTTP"'), 'the access line of the malformed request');

  const entries = server.stdout().split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as Record<string, unknown>);
  const lines = entries.filter((e) => e.msg === 'request completed');
  for (const [id, , , status, code] of cases) {
    const entry = lines.find((e) => e.reqId === id);
    assert.ok(entry, `no "request completed" line for ${id}`);
    assert.equal(entry.statusCode, status, id);
    assert.equal(entry.code, code, id);
    if (code === undefined) assert.ok(!('code' in entry), `${id}: a success names a code`);
  }
  const raw = lines.filter((e) => e.reqId === undefined);
  assert.deepEqual(raw.map((e) => [e.statusCode, e.code]), [[400, 'BAD_HTTP']]);
  const expect = lines.find((e) => e.reqId === 'expect-1');
  assert.deepEqual([expect?.statusCode, expect?.code, expect?.path], [417, 'EXPECTATION_FAILED', '/healthz']);
});
