// Property-based fuzzing of the webhook operations (POST/GET /webhooks, GET/DELETE /webhooks/{id},
// deliveries and retry) through fetch, and of every operation through raw sockets: random bytes, broken
// request lines, wrong and duplicated headers (Content-Length, Transfer-Encoding, Content-Type,
// Authorization, Host), odd encodings, oversized headers and pipelining, which fetch cannot send.
// Properties as in plants-fuzz.test.ts; raw answers are not checked by the OpenAPI response validator (it
// wraps fetch), so 431 for oversized URLs is allowed there. Seeds and longer runs: see ./support.ts.
import { test } from 'node:test';
import fc from 'fast-check';
import { startApp } from '../helpers/app.js';
import { rawHttp } from '../helpers/raw-request.js';
import {
  assertRawAnswer,
  assertStillServes,
  check,
  counted,
  deepNesting,
  fetchChecked,
  hugeNumberText,
  jsonish,
  memoryGuard,
  mutate,
  nastyString,
  oddContentType,
  oddEncoding,
  pathJunk,
  queryJunk,
} from './support.js';

const VALID_WEBHOOK = '{"url":"http://127.0.0.1:9/hook","description":"fuzz"}';

test('fuzz: webhook operations answer 2xx or an Error 4xx', { timeout: 600_000 }, async (t) => {
  // Its own service, with no plants created, so no delivery is ever attempted to a fuzzed URL.
  const s = await startApp(t);
  const token = (await s.tokens.create({ name: 'webhooks', scopes: ['webhooks:manage', 'plants:read', 'plants:write'] })).secret;
  const rssBounded = memoryGuard(t);
  const started = Date.now();
  const auth = { authorization: `Bearer ${token}` };
  const created = await fetch(`${s.url}/webhooks`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: VALID_WEBHOOK });
  const realId = ((await created.json()) as { id: string }).id;

  await t.test('POST /webhooks bodies and content types', async (t) => {
    const body = fc.oneof(
      fc
        .record(
          {
            url: fc.oneof(fc.webUrl({ withQueryParameters: true, withFragments: true }), nastyString, fc.constantFrom('file:///etc/passwd', 'javascript:alert(1)', 'http://', 'http://[::1', 'ftp://x/', 'http://a'.padEnd(3000, 'a'), 'HTTP://127.0.0.1:0/'), jsonish),
            description: fc.oneof(nastyString, jsonish),
            events: jsonish,
            secret: jsonish,
          },
          { requiredKeys: [] },
        )
        .map((o) => JSON.stringify(o)),
      mutate(VALID_WEBHOOK),
      jsonish.map((v) => JSON.stringify(v) ?? ''),
      fc.uint8Array({ maxLength: 256 }).map((a) => Buffer.from(a)),
      deepNesting,
      hugeNumberText.map((n) => `{"url":${n}}`),
    );
    await check(
      t,
      1_300,
      fc.asyncProperty(body, oddContentType, oddEncoding, async (b, type, enc) => {
        const headers: Record<string, string> = { ...auth, ...(type !== '' && { 'content-type': type }), ...(enc !== undefined && { 'content-encoding': enc }) };
        await fetchChecked(`${s.url}/webhooks`, { method: 'POST', headers, body: b }, `POST /webhooks ${type} ${enc} ${String(b).slice(0, 200)}`);
      }),
    );
  });

  await t.test('webhook paths and queries', async (t) => {
    const id = fc.oneof(pathJunk, fc.constant(realId), fc.string({ maxLength: 70 }).map((x) => encodeURIComponent(`wh_${x}`)));
    const op = fc.oneof(
      fc.tuple(fc.constantFrom('GET', 'DELETE', 'POST'), queryJunk).map(([m, q]) => ({ method: m, path: `/webhooks${q}` })),
      fc.tuple(fc.constantFrom('GET', 'GET', 'DELETE', 'PUT'), id, queryJunk).map(([m, i, q]) => ({ method: m, path: `/webhooks/${i}${q}` })),
      fc.tuple(id, queryJunk).map(([i, q]) => ({ method: 'GET', path: `/webhooks/${i}/deliveries${q}` })),
      fc.tuple(fc.constantFrom('POST', 'GET'), id, pathJunk).map(([m, i, d]) => ({ method: m, path: `/webhooks/${i}/deliveries/${d}/retry` })),
    );
    await check(
      t,
      1_200,
      fc.asyncProperty(op, async ({ method, path }) => {
        // DELETE of the real subscription would end its coverage early; the fuzz deletes only junk ids.
        if (method === 'DELETE' && path.startsWith(`/webhooks/${realId}`)) return;
        await fetchChecked(`${s.url}${path}`, { method, headers: auth }, `${method} ${path.slice(0, 300)}`);
      }),
    );
  });

  await assertStillServes(s, 1);
  rssBounded();
  t.diagnostic(`${counted.cases} cases in ${((Date.now() - started) / 1000).toFixed(1)} s`);
});

test('fuzz: raw HTTP bytes, broken framing and duplicated headers get 2xx or an Error 4xx', { timeout: 600_000 }, async (t) => {
  // Raw requests carry wrong or no Authorization; with the default throttle the address would get 429 for
  // the rest of the minute (tested in test/auth/throttle.test.ts), hiding whether the service still works.
  const s = await startApp(t, { config: { authFailuresPerMinute: 1_000_000 } });
  const rssBounded = memoryGuard(t);
  const started = Date.now();
  const before = counted.cases;
  const bearer = `Bearer ${s.token.all}`;
  const paths = fc.oneof(
    fc.constantFrom('/plants', '/plants/1', '/webhooks', '/webhooks/wh_x', '/webhooks/wh_x/deliveries', '/webhooks/wh_x/deliveries/d/retry', '/healthz', '/readyz', '/openapi.json', '/openapi.yaml', '/metrics', '*', '', 'http://127.0.0.1/plants', '/plants#x'),
    fc.tuple(fc.constantFrom('/plants/', '/webhooks/', '/'), pathJunk, queryJunk).map(([a, b, q]) => a + b + q),
    fc.integer({ min: 16_000, max: 40_000 }).map((n) => `/plants?tag=${'t'.repeat(n)}`),
  );
  const header = fc.oneof(
    { weight: 8, arbitrary: fc.constantFrom(
      ['Content-Length', '5'],
      ['Content-Length', '-1'],
      ['Content-Length', '99999999999999999999'],
      ['Content-Length', '1, 2'],
      ['Content-Length', 'abc'],
      ['Transfer-Encoding', 'chunked'],
      ['Transfer-Encoding', 'gzip, chunked'],
      ['Transfer-Encoding', 'chunked, identity'],
      ['Transfer-Encoding', 'x'],
      ['Content-Type', 'application/json'],
      ['Content-Type', 'text/plain'],
      ['Content-Encoding', 'gzip'],
      ['Content-Encoding', 'br'],
      ['Authorization', bearer],
      ['Authorization', 'Bearer nope'],
      ['Authorization', 'Basic Zm9vOmJhcg=='],
      ['Host', 'evil.example'],
      ['Host', ''],
      ['Expect', '100-continue'],
      ['Expect', 'x'],
      ['Connection', 'upgrade'],
      ['Upgrade', 'websocket'],
      ['X-Request-Id', '\u00ff\u00fe'],
      ['Accept', 'application/json'],
    ) as fc.Arbitrary<[string, string]> },
    { weight: 2, arbitrary: fc.tuple(fc.string({ minLength: 1, maxLength: 20 }), fc.string({ maxLength: 40 })) },
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom('X-Big', 'Cookie'), fc.integer({ min: 1_000, max: 20_000 }).map((n) => 'v'.repeat(n))) },
  );
  const body = fc.oneof(
    fc.constantFrom('', '{"id":5,"name":"raw"}', '0\r\n\r\n', '5\r\n{"id"\r\n0\r\n\r\n', 'zz\r\nxx\r\n0\r\n\r\n', '{"id":', '\u0000'),
    fc.uint8Array({ maxLength: 200 }).map((a) => Buffer.from(a).toString('latin1')),
    nastyString.filter((x) => x.length < 5_000),
  );
  const request = fc.oneof(
    { weight: 6, arbitrary: fc
      .tuple(
        fc.constantFrom('GET', 'GET', 'POST', 'POST', 'DELETE', 'PUT', 'HEAD', 'OPTIONS', 'PATCH', 'TRACE', 'CONNECT', 'get', 'G T', ''),
        paths,
        fc.constantFrom('HTTP/1.1', 'HTTP/1.1', 'HTTP/1.1', 'HTTP/1.1', 'HTTP/1.0', 'HTTP/2.0', 'HTTP/9', 'http/1.1', ''),
        fc.array(header, { maxLength: 6 }),
        fc.boolean(),
        body,
        fc.constantFrom('\r\n', '\r\n', '\r\n', '\n', '\r'),
        fc.boolean(),
      )
      .map(([method, path, version, headers, auth, b, eol, pipelined]) => {
        // Without framing headers the body would be read as a second request; usually frame it correctly.
        const framed = headers.some(([k]) => /^(content-length|transfer-encoding)$/i.test(k));
        const length = framed ? [] : [`Content-Length: ${Buffer.byteLength(b, 'latin1')}`];
        const lines = [`${method} ${path} ${version}`, 'Host: 127.0.0.1', ...(auth ? [`Authorization: ${bearer}`] : []), ...headers.map(([k, v]) => `${k}: ${v}`), ...length];
        const one = lines.join(eol) + eol + eol + b;
        const valid = `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: ${bearer}\r\nContent-Type: application/json\r\nContent-Length: 22\r\n\r\n{"id":3,"name":"pipe"}`;
        return Buffer.from(pipelined ? one + valid : one, 'latin1');
      }) },
    { weight: 1, arbitrary: fc.uint8Array({ minLength: 1, maxLength: 600 }).map((a) => Buffer.from(a)) },
    { weight: 1, arbitrary: mutate(`POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: ${bearer}\r\nContent-Type: application/json\r\nContent-Length: 21\r\n\r\n{"id":7,"name":"raw"}`) },
  );
  const tally = new Map<string, number>();
  await check(
    t,
    2_200,
    fc.asyncProperty(request, async (bytes) => {
      const raw = await rawHttp(s.port, bytes, { halfClose: true });
      const statuses = assertRawAnswer(raw, JSON.stringify(bytes.toString('latin1').slice(0, 300)));
      if (statuses.length === 0) tally.set('no answer', (tally.get('no answer') ?? 0) + 1);
      for (const st of statuses) tally.set(String(st), (tally.get(String(st)) ?? 0) + 1);
    }),
  );
  // An id no fuzzed request can take: a one-byte mutation of the raw create turned {"id":7} into {"id":2} once
  // (its plant then made the check's create a 409).
  await assertStillServes(s, 900_000_002);
  rssBounded();
  t.diagnostic(`answers: ${JSON.stringify(Object.fromEntries([...tally].sort()))}`);
  t.diagnostic(`${counted.cases - before} raw cases in ${((Date.now() - started) / 1000).toFixed(1)} s`);
});
