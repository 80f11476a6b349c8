// Security headers on every kind of answer, and CORS: off by default, exact origins when configured.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startApp } from '../helpers/app.js';
import { parseRawResponse, rawHttp } from '../helpers/raw-request.js';
import { API_CSP } from '../../src/http/security-headers.js';
import { loadConfig, ConfigError } from '../../src/config.js';

const COMMON = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-resource-policy': 'same-origin',
};

function assertCommon(headers: Headers | Record<string, string | undefined>, what: string) {
  const get = (n: string) => (headers instanceof Headers ? headers.get(n) : headers[n]) ?? null;
  for (const [name, value] of Object.entries(COMMON)) assert.equal(get(name), value, `${name} on ${what}`);
  assert.equal(get('strict-transport-security'), null, `no HSTS on ${what} (the TLS terminator sets it)`);
}

function assertNoCors(res: Response, what: string) {
  const cors = [...res.headers.keys()].filter((k) => k.startsWith('access-control-'));
  assert.deepEqual(cors, [], `no CORS headers on ${what}`);
}

test('every kind of answer carries the security headers and the API policy', async (t) => {
  const s = await startApp(t);
  const created = await s.postPlant({ id: 7, name: 'fern' });
  assert.ok(created.ok, `created: ${created.status}`);
  await created.arrayBuffer();
  const cases: [string, Promise<Response>, number][] = [
    ['a list', fetch(`${s.url}/plants`, { headers: { authorization: `Bearer ${s.token.read}` } }), 200],
    ['one plant', fetch(`${s.url}/plants/7`, { headers: { authorization: `Bearer ${s.token.read}` } }), 200],
    ['401', fetch(`${s.url}/plants`), 401],
    ['400', s.postPlant('{'), 400],
    ['404', fetch(`${s.url}/no-such-path`), 404],
    ['405', fetch(`${s.url}/plants`, { method: 'PUT', headers: { authorization: `Bearer ${s.token.write}` } }), 405],
    ['the document', fetch(`${s.url}/openapi.json`), 200],
  ];
  for (const [what, pending, status] of cases) {
    const res = await pending;
    await res.arrayBuffer();
    assert.equal(res.status, status, what);
    assertCommon(res.headers, what);
    assert.equal(res.headers.get('content-security-policy'), API_CSP, `CSP on ${what}`);
    assertNoCors(res, what);
  }
});

test('answers from the error paths carry them too: 413, 415, 429, and 503 once a shutdown began', async (t) => {
  const s = await startApp(t, { config: { bodyLimit: 64, rateLimitPerToken: 1 } });
  const read = { authorization: `Bearer ${s.token.read}` };
  const first = await fetch(`${s.url}/plants`, { headers: read });
  await first.arrayBuffer();
  const cases: [string, () => Promise<Response>, number][] = [
    ['413', () => s.postPlant({ id: 1, name: 'x'.repeat(100) }), 413],
    // Each token's one request of the window: the 429 is the read token's second.
    ['415', () => s.postPlant('id=1', { 'content-type': 'text/plain', authorization: `Bearer ${s.token.all}` }), 415],
    ['429', () => fetch(`${s.url}/plants`, { headers: read }), 429],
  ];
  for (const [what, send, status] of cases) {
    const res = await send();
    await res.arrayBuffer();
    assert.equal(res.status, status, what);
    assertCommon(res.headers, what);
    assert.equal(res.headers.get('content-security-policy'), API_CSP, `CSP on ${what}`);
  }
  s.app.drain();
  const closing = await fetch(`${s.url}/plants`, { headers: read });
  await closing.arrayBuffer();
  assert.equal(closing.status, 503);
  assertCommon(closing.headers, 'the 503 of a shutdown');
  assert.equal(closing.headers.get('content-security-policy'), API_CSP);
});

test('a malformed request answered by the framework also carries them', async (t) => {
  const s = await startApp(t);
  const res = parseRawResponse(await rawHttp(s.port, 'GET /plants/%zz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', 200));
  assert.ok(res.status >= 400, `status ${res.status}`);
  assertCommon(res.headers, `status ${res.status}`);
});

test('/docs keeps its own strict policy; the security headers are there too', async (t) => {
  const s = await startApp(t);
  for (const path of ['/docs', '/docs/']) {
    const res = await fetch(`${s.url}${path}`);
    await res.arrayBuffer();
    assertCommon(res.headers, path);
    const csp = res.headers.get('content-security-policy');
    if (res.status === 200) {
      assert.ok(csp, `${path} has a CSP`);
      assert.notEqual(csp, API_CSP, `${path} keeps the page's own policy`);
      assert.match(csp!, /script-src 'self'/);
    }
  }
});

test('CORS is off by default: no Access-Control headers, a preflight gets the usual Error', async (t) => {
  const s = await startApp(t);
  const get = await fetch(`${s.url}/plants`, { headers: { authorization: `Bearer ${s.token.read}`, origin: 'https://app.example' } });
  await get.arrayBuffer();
  assert.equal(get.status, 200);
  assertNoCors(get, 'a GET with Origin');
  const pre = await fetch(`${s.url}/plants`, {
    method: 'OPTIONS',
    headers: { origin: 'https://app.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
  });
  const body = (await pre.json()) as { error: number; message: string };
  assert.equal(pre.status, 405);
  assert.equal(body.error, 405);
  assertNoCors(pre, 'a preflight');
  assertCommon(pre.headers, 'a preflight');
});

test('CORS_ORIGINS: a listed origin gets preflights answered, others get nothing', async (t) => {
  const s = await startApp(t, { config: { corsOrigins: ['https://app.example'] } });
  const preflight = (path: string, origin: string, method = 'POST') =>
    fetch(`${s.url}${path}`, {
      method: 'OPTIONS',
      headers: { 'x-conformance': 'skip', origin, 'access-control-request-method': method, 'access-control-request-headers': 'authorization, content-type' },
    });

  const ok = await preflight('/plants', 'https://app.example');
  assert.equal(ok.status, 204);
  assert.equal(await ok.text(), '');
  assert.equal(ok.headers.get('access-control-allow-origin'), 'https://app.example');
  assert.equal(ok.headers.get('access-control-allow-methods'), 'GET, HEAD, POST');
  assert.match(ok.headers.get('access-control-allow-headers') ?? '', /Authorization/);
  assert.match(ok.headers.get('access-control-allow-headers') ?? '', /Content-Type/);
  assert.equal(ok.headers.get('access-control-allow-credentials'), null, 'bearer tokens, no cookies');
  assert.match(ok.headers.get('vary') ?? '', /Origin/);
  assertCommon(ok.headers, 'a preflight');

  const one = await preflight('/plants/1', 'https://app.example', 'DELETE');
  assert.equal(one.status, 204);
  assert.match(one.headers.get('access-control-allow-methods') ?? '', /DELETE/);

  const other = await preflight('/plants', 'https://evil.example');
  await other.arrayBuffer();
  assert.equal(other.status, 405);
  assertNoCors(other, 'a preflight from another origin');

  const unknown = await preflight('/no-such-path', 'https://app.example');
  await unknown.arrayBuffer();
  assert.equal(unknown.status, 404);
  assert.equal(unknown.headers.get('access-control-allow-methods'), null);

  const get = await fetch(`${s.url}/plants`, { headers: { authorization: `Bearer ${s.token.read}`, origin: 'https://app.example' } });
  await get.arrayBuffer();
  assert.equal(get.status, 200);
  assert.equal(get.headers.get('access-control-allow-origin'), 'https://app.example');
  assert.match(get.headers.get('access-control-expose-headers') ?? '', /X-Request-Id/);
  // A failure is readable too, so the page can show it.
  const denied = await fetch(`${s.url}/plants`, { headers: { origin: 'https://app.example' } });
  await denied.arrayBuffer();
  assert.equal(denied.status, 401);
  assert.equal(denied.headers.get('access-control-allow-origin'), 'https://app.example');

  const otherGet = await fetch(`${s.url}/plants`, { headers: { authorization: `Bearer ${s.token.read}`, origin: 'https://evil.example' } });
  await otherGet.arrayBuffer();
  assertNoCors(otherGet, 'a GET from another origin');
});

test('CORS_ORIGINS is parsed as exact origins', () => {
  assert.deepEqual(loadConfig({}).corsOrigins, []);
  assert.deepEqual(loadConfig({ CORS_ORIGINS: ' https://a.example, http://localhost:5173 ' }).corsOrigins, ['https://a.example', 'http://localhost:5173']);
  for (const bad of ['*', 'https://a.example/', 'https://a.example/app', 'a.example', 'ftp://a.example', 'https://A.example']) {
    assert.throws(() => loadConfig({ CORS_ORIGINS: bad }), ConfigError, bad);
  }
});
