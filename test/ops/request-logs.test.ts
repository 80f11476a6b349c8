// Structured JSON logs of the real server: one line per request with its request id (an incoming
// X-Request-Id is honoured and echoed), and never a token or a request body.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnServer } from '../helpers/app.js';
import { databaseWithToken, sleep } from './support.js';

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
  await sleep(100);

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
