// X-Request-Id: a sane incoming value is echoed on every answer, success or error; otherwise one is made.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startApp } from '../helpers/app.js';
import { parseRawResponse, rawHttp } from '../helpers/raw-request.js';

test('X-Request-Id', async (t) => {
  const s = await startApp(t);
  const post = (body: string, requestId?: string, headers: Record<string, string> = {}) =>
    s.postPlant(body, { ...(requestId !== undefined && { 'x-request-id': requestId }), ...headers });

  const sane = ['abc-123', 'req_1.2:3@svc/x+y=z', '0af7651916cd43dd8448eb211c80319c', 'r'.repeat(128), 'A'];
  for (const id of sane) {
    await t.test(`a sane value is echoed: ${id.slice(0, 40)}`, async () => {
      const res = await post(`{"id": ${sane.indexOf(id) + 1}, "name": "x"}`, id);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('x-request-id'), id);
    });
  }

  await t.test('echoed on errors of every layer too', async () => {
    const id = 'trace-me-42';
    const responses = [
      await post('{"name": 1}', id), // 400 validation
      await post('{', id), // 400 malformed
      await post('{"id": 1, "name": "other"}', id), // 409
      await post('x', id, { 'content-type': 'text/plain' }), // 415
      await post('{"id": 1, "name": "x"}', id, { authorization: 'Bearer nope' }), // 401
      await post('{"id": 1, "name": "x"}', id, { authorization: `Bearer ${s.token.read}` }), // 403
      await fetch(`${s.url}/nope`, { headers: { 'x-request-id': id } }), // 404
      await fetch(`${s.url}/plants`, { method: 'PUT', headers: { 'x-request-id': id } }), // 405
    ];
    assert.deepEqual(responses.map((r) => r.status), [400, 400, 409, 415, 401, 403, 404, 405]);
    for (const r of responses) assert.equal(r.headers.get('x-request-id'), id, `status ${r.status}`);
  });

  await t.test('echoed on a malformed URL, answered before routing', async () => {
    const res = parseRawResponse(await rawHttp(s.port, 'GET /%zz HTTP/1.1\r\nHost: x\r\nX-Request-Id: bad-url-1\r\nConnection: close\r\n\r\n', 200));
    assert.equal(res.status, 400);
    assert.equal(res.headers['x-request-id'], 'bad-url-1');
  });

  await t.test('echoed on a 413', async () => {
    const res = await post(JSON.stringify({ id: 50, name: 'x', pad: 'p'.repeat(1.1 * 1024 * 1024) }), 'too-big-1');
    assert.equal(res.status, 413);
    assert.equal(res.headers.get('x-request-id'), 'too-big-1');
  });

  await t.test('absent: a fresh id is generated per request', async () => {
    const a = await fetch(`${s.url}/healthz`);
    const b = await fetch(`${s.url}/healthz`);
    const idA = a.headers.get('x-request-id') ?? '';
    const idB = b.headers.get('x-request-id') ?? '';
    assert.match(idA, /^[\w.:@/+=-]{8,128}$/);
    assert.match(idB, /^[\w.:@/+=-]{8,128}$/);
    assert.notEqual(idA, idB);
  });

  const insane: Array<[string, string]> = [
    ['too long (129 characters)', 'r'.repeat(129)],
    ['with spaces', 'abc 123'],
    ['empty', ''],
    ['with quotes and angle brackets', '"<script>"'],
    ['with a comma (two ids)', 'a,b'],
    ['with a semicolon', 'a;b'],
    ['with a tab', 'a\tb'],
  ];
  for (const [label, id] of insane) {
    await t.test(`an insane value is replaced: ${label}`, async () => {
      const res = await fetch(`${s.url}/healthz`, { headers: { 'x-request-id': id } });
      const echoed = res.headers.get('x-request-id') ?? '';
      assert.notEqual(echoed, id);
      assert.ok(!echoed.includes(id.trim()) || id.trim() === '', `echoed ${echoed}`);
      assert.match(echoed, /^[\w.:@/+=-]{8,128}$/);
    });
  }

  await t.test('two X-Request-Id headers are not echoed joined', async () => {
    const raw = await rawHttp(s.port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Request-Id: one\r\nX-Request-Id: two\r\nConnection: close\r\n\r\n', 200);
    const res = parseRawResponse(raw);
    assert.equal(res.status, 200);
    assert.doesNotMatch(res.headers['x-request-id'] ?? '', /one.*two/);
  });

  await t.test('non-ASCII bytes in the header are replaced', async () => {
    const raw = await rawHttp(s.port, Buffer.from('GET /healthz HTTP/1.1\r\nHost: x\r\nX-Request-Id: caf\u00e9\r\nConnection: close\r\n\r\n', 'latin1'), 200);
    const res = parseRawResponse(raw);
    assert.equal(res.status, 200);
    assert.match(res.headers['x-request-id'] ?? '', /^[\w.:@/+=-]{8,128}$/);
  });
});
