// Every error, whatever its status and whichever layer raises it, is an Error body with Content-Type
// application/json: never a framework default body, never an empty body, never a stack trace.
import { METHODS } from 'node:http';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { errorOf, startApp } from '../helpers/app.js';
import { parseRawResponse, rawHttp } from '../helpers/raw-request.js';
import { assertErrorText, rawError } from './support.js';
import { storedPlant } from '../helpers/stored-plant.js';
import { ResponseValidator } from '../helpers/response-validator.js';
import { SCOPES } from '../../src/auth/tokens.js';

test('unknown paths are 404 Error', async (t) => {
  const s = await startApp(t);
  const cases: Array<[string, string]> = [
    ['GET', '/nope'],
    ['POST', '/nope'],
    ['DELETE', '/nope/deeper?x=1'],
    ['POST', '/PLANTS'],
    ['GET', '/plants/1/deeper'],
    ['GET', '/index.html'],
  ];
  for (const [method, path] of cases) {
    await t.test(`${method} ${path}`, async () => {
      const res = await fetch(`${s.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${s.token.write}`, 'content-type': 'application/json' },
        ...(method !== 'GET' && { body: '{"id": 1, "name": "x"}' }),
      });
      assert.equal(res.status, 404);
      const err = await errorOf(res);
      assert.match(err.message, new RegExp(method));
    });
  }
  await t.test('a 404 for a very long path has a bounded message', async () => {
    const res = await fetch(`${s.url}/${'a'.repeat(5000)}`);
    assert.equal(res.status, 404);
    assert.ok((await errorOf(res)).message.length < 400);
  });
  await t.test('nothing was created by a POST to an unknown path', async () => {
    assert.equal(await s.store.countPlants(), 0);
  });
});

test('other methods on /plants are 405 Error with Allow: GET, HEAD, POST', async (t) => {
  const s = await startApp(t);
  for (const method of ['PUT', 'DELETE', 'PATCH', 'OPTIONS']) {
    await t.test(method, async () => {
      const res = await fetch(`${s.url}/plants`, {
        method,
        headers: { authorization: `Bearer ${s.token.all}`, 'content-type': 'application/json' },
        body: '{"id": 1, "name": "x"}',
      });
      assert.equal(res.status, 405);
      assert.equal(res.headers.get('allow'), 'GET, HEAD, POST');
      const err = await errorOf(res);
      assert.match(err.message, new RegExp(method));
    });
  }
  await t.test('POST /plants/1: 405 with the allowed methods of /plants/{id}', async () => {
    const res = await fetch(`${s.url}/plants/1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    assert.equal(res.status, 405);
    assert.equal(res.headers.get('allow'), 'DELETE, GET, HEAD, PATCH, PUT');
    await errorOf(res);
  });
  await t.test('405 comes before authentication and before the body is looked at', async () => {
    const res = await fetch(`${s.url}/plants`, { method: 'PUT', headers: { 'content-type': 'text/plain' }, body: 'not json' });
    assert.equal(res.status, 405);
    await errorOf(res);
  });
  await t.test('nothing was created', async () => assert.equal(await s.store.countPlants(), 0));
});

test('every method Node accepts is 405 with Allow on a known path, before authentication, with or without a body; 404 on an unknown path', async (t) => {
  const s = await startApp(t);
  const unsupported = METHODS.filter((m) => !['CONNECT', 'GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'].includes(m));
  assert.ok(['QUERY', 'SEARCH', 'PROPFIND', 'PURGE', 'LINK', 'MKCOL', 'REPORT', 'M-SEARCH'].every((m) => unsupported.includes(m)));
  for (const method of unsupported) {
    for (const [path, allow] of [['/plants', 'GET, HEAD, POST'], ['/plants/1', 'DELETE, GET, HEAD, PATCH, PUT']] as const) {
      for (const body of [undefined, '{"id": 1, "name": "x"}']) {
        const head = `${method} ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n`;
        const request = body === undefined ? `${head}\r\n` : `${head}Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
        const res = await rawError(s.port, request, 405);
        assert.equal(res.headers.allow, allow, `${method} ${path}`);
        assert.ok(res.error.message.includes(method), res.error.message);
      }
    }
    const unknown = await rawError(s.port, `${method} /nowhere HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`, 404);
    assert.ok(unknown.error.message.includes(method), unknown.error.message);
  }
  assert.equal(await s.store.countPlants(), 0);
});

test('broken HTTP is answered with an Error body, not a default or empty one', async (t) => {
  const s = await startApp(t);
  const cases: Array<[string, string, number]> = [
    ['a garbage request line', 'GARBAGE\r\n\r\n', 400],
    ['an unknown HTTP version', 'GET / HTTP/9.9\r\nHost: x\r\n\r\n', 400],
    ['a header without a colon', 'GET / HTTP/1.1\r\nHost: x\r\nBroken header\r\n\r\n', 400],
    ['a non-numeric Content-Length', 'POST /plants HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n', 400],
    ['Content-Length and chunked together', 'POST /plants HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', 400],
    ['a bad chunk size', 'POST /plants HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n', 400],
    ['a bad percent-encoding in the path', 'GET /%zz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', 400],
    ['a truncated percent-encoding under /plants', 'POST /plants/%E0%A4%A HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', 400],
    ['a percent-encoded invalid UTF-8 sequence', 'GET /%ff%fe HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', 400],
    ['an HTTP/1.1 request without Host', 'GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n', 400],
    ['a POST /plants without Host', 'POST /plants HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}', 400],
    ['an unsupported Expect', 'GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nConnection: close\r\n\r\n', 417],
    ['headers larger than the server accepts', `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431],
  ];
  for (const [label, request, status] of cases) {
    await t.test(`${label} -> ${status}`, async () => {
      const res = await rawError(s.port, request, status);
      assert.ok(!('statuscode' in JSON.parse(res.body)));
      assert.equal(res.headers['x-content-type-options'], 'nosniff', label);
      // Even the answer Node's parser gives before any header is read carries what needs no token.
      if (status === 431) assert.equal(res.headers['cache-control'], 'no-store', label);
    });
  }
  await t.test('a 417 carries what every answer carries: security headers, request id, and for an authenticated operation Cache-Control and RateLimit; authentication comes first', async () => {
    const send = (auth: string) =>
      rawHttp(s.port, `POST /plants HTTP/1.1\r\nHost: x\r\n${auth}Expect: 200-ok\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`, 200);
    const res = parseRawResponse(await send(`Authorization: Bearer ${s.token.write}\r\n`));
    assert.equal(res.status, 417);
    assert.deepEqual(JSON.parse(res.body), { error: 417, message: 'The Expect header is not supported; only Expect: 100-continue is.' });
    for (const name of ['cache-control', 'ratelimit', 'ratelimit-policy', 'x-content-type-options', 'content-security-policy', 'x-request-id']) {
      assert.ok(res.headers[name], `417 carries ${name}`);
    }
    assert.equal(res.headers['cache-control'], 'no-store');
    assert.equal(parseRawResponse(await send('')).status, 401);
    assert.equal(await s.store.countPlants(), 0);
  });
  await t.test('every operation of the document answers an unsupported Expect with the 417 it declares', async () => {
    const validator = new ResponseValidator();
    const token = (await s.tokens.create({ name: 'every scope', scopes: [...SCOPES] })).secret;
    const examples: Record<string, string> = { id: '10042', deliveryId: 'dlv_5f0c9a1e7b2d4c83a6e1f09b' };
    let operations = 0;
    for (const [template, item] of Object.entries<Record<string, { operationId?: string; requestBody?: unknown }>>(validator.doc.paths)) {
      const path = template.replace(/\{([^}]+)\}/g, (_, name: string) => (template.startsWith('/webhooks') && name === 'id' ? 'wh_Vh3q9LmT0xKa2bYc' : examples[name]!));
      for (const method of Object.keys(item).filter((m) => item[m]?.operationId)) {
        const body = item[method]!.requestBody ? '{}' : '';
        const type = method === 'patch' ? 'application/merge-patch+json' : 'application/json';
        const framing = body ? `Content-Type: ${type}\r\nContent-Length: ${body.length}\r\n` : '';
        const raw = await rawHttp(s.port, `${method.toUpperCase()} ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nExpect: 200-ok\r\n${framing}Connection: close\r\n\r\n${body}`, 200);
        const res = parseRawResponse(raw);
        const where = `${method.toUpperCase()} ${path}`;
        assert.equal(res.status, 417, where);
        if (method !== 'head') assertErrorText(res.body, 417);
        assert.deepEqual(await validator.check(method, path, { status: res.status, headers: new Headers(res.headers), body: method === 'head' ? '' : res.body }), [], where);
        operations++;
      }
    }
    assert.equal(operations, 41);
    assert.equal(await s.store.countPlants(), 0);
  });
  await t.test('HTTP/1.0 without Host is fine (Host is only required in 1.1)', async () => {
    const res = parseRawResponse(await rawHttp(s.port, 'GET /healthz HTTP/1.0\r\n\r\n', 200));
    assert.equal(res.status, 200);
  });
  await t.test('Expect: 100-continue is honoured', async () => {
    const body = '{"id": 1, "name": "continued"}';
    const raw = await rawHttp(
      s.port,
      `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.token.write}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${body.length}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n${body}`,
      200,
    );
    assert.match(raw, /HTTP\/1\.1 200 OK/);
    assert.deepEqual(await storedPlant(s.store, 1n), { id: 1n, name: 'continued' });
  });
  await t.test('the server still answers normally', async () => {
    assert.equal((await s.postPlant('{"id": 2, "name": "after"}')).status, 200);
  });
});

test('failures inside the service are Error bodies without internals', async (t) => {
  const s = await startApp(t);

  await t.test('an unexpected exception is 500 "Internal server error", nothing of the exception leaks', async () => {
    const original = s.store.createPlant;
    s.store.createPlant = async () => {
      const err = new TypeError('secret-internal-detail at /srv/app/src/storage.ts:42');
      throw err;
    };
    try {
      const res = await s.postPlant('{"id": 1, "name": "boom"}');
      assert.equal(res.status, 500);
      const text = await res.clone().text();
      assert.doesNotMatch(text, /secret-internal-detail|storage\.ts|TypeError|stack/);
      assertErrorText(text, 500);
      await errorOf(res);
    } finally {
      s.store.createPlant = original;
    }
  });

  await t.test('a failing store is 503 Error and acknowledges nothing', async () => {
    // Warm the token cache so the failure is the write's, not authentication's.
    assert.equal((await s.postPlant('{"id": 2, "name": "before"}')).status, 200);
    await s.store.close();
    const res = await s.postPlant('{"id": 3, "name": "lost"}');
    assert.equal(res.status, 503);
    const text = await res.clone().text();
    assert.doesNotMatch(text, /SQLITE|sqlite|database|closed|\.ts:|\.js:/i);
    await errorOf(res);
  });
});
