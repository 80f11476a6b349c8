// Property-based fuzzing of the plant operations (POST/GET /plants, GET/DELETE /plants/{id}) and the
// operational endpoints with a valid token: random, schema-derived and mutated bodies, huge numbers, long
// strings, deep nesting, odd content types and encodings, wrong headers, path and query junk. Properties:
// every answer is 2xx or 4xx, an error answer is the Error body in JSON (and, through the response
// validator of `npm test`, every answer is one the OpenAPI document describes), the server keeps serving a
// valid POST /plants, and the process RSS stays bounded. Seeds and longer runs: see ./support.ts.
import { test } from 'node:test';
import fc from 'fast-check';
import { startApp, type TestApp } from '../helpers/app.js';
import {
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

const VALID = '{"id":1,"name":"Monstera","tag":"aroid"}';

/** Bodies for POST /plants, as bytes. */
const plantBody: fc.Arbitrary<string | Buffer> = fc.oneof(
  // Schema-derived: the fields the contract names, with values in and out of their types.
  fc
    .record(
      {
        id: fc.oneof(fc.integer(), fc.maxSafeInteger(), fc.double(), nastyString, fc.constant(null), fc.boolean(), jsonish),
        name: fc.oneof(nastyString, fc.integer(), fc.constant(null), jsonish),
        tag: fc.oneof(nastyString, fc.constant(null), jsonish),
        extra: jsonish,
      },
      { requiredKeys: [] },
    )
    .map((o) => JSON.stringify(o)),
  // Valid shape with a huge or odd number written as text (never re-serialized).
  fc.tuple(hugeNumberText, fc.string({ maxLength: 20 })).map(([n, name]) => `{"id":${n},"name":${JSON.stringify(name)}}`),
  fc.tuple(fc.nat(), hugeNumberText).map(([id, n]) => `{"id":${id},"name":${n}}`),
  // Any JSON value.
  jsonish.map((v) => JSON.stringify(v) ?? 'undefined'),
  // Mutated valid bodies, random bytes, deep nesting, duplicated keys.
  mutate(VALID),
  fc.uint8Array({ maxLength: 512 }).map((a) => Buffer.from(a)),
  deepNesting,
  fc.tuple(fc.nat(), fc.nat()).map(([a, b]) => `{"id":${a},"id":${b},"name":"a","name":{"x":1}}`),
  fc.constantFrom('', ' ', 'null', '[]', '{}', '"x"', '{"__proto__":{"id":1},"name":"p"}', '{"constructor":{"prototype":{}},"id":2,"name":"c"}', '\ufeff' + VALID, VALID + VALID, VALID + 'x', '{"id":1,"name":"\\ud800"}', '{"id":1,"name":"\\u0000"}'),
);

/** Extra request headers, including wrong and duplicated-by-value ones fetch can send. */
const extraHeaders = fc
  .record(
    {
      'content-encoding': oddEncoding,
      accept: fc.constantFrom(undefined, '*/*', 'text/html', 'application/xml', 'application/json;q=0', ''),
      'accept-encoding': fc.constantFrom(undefined, 'gzip', 'br', 'identity;q=0', '*;q=0', 'x'),
      'x-request-id': fc.oneof(fc.constant(undefined), fc.string({ maxLength: 300 })),
      'idempotency-key': fc.oneof(fc.constant(undefined), fc.string({ maxLength: 300 })),
      'x-forwarded-for': fc.constantFrom(undefined, '1.2.3.4', 'junk', '::1, 10.0.0.1', ''),
      range: fc.constantFrom(undefined, 'bytes=0-1', 'junk'),
    },
    { requiredKeys: [] },
  )
  .map((h) => Object.fromEntries(Object.entries(h).filter(([, v]) => v !== undefined)) as Record<string, string>);

test('fuzz: plant operations answer 2xx or an Error 4xx, and the service keeps serving', { timeout: 600_000 }, async (t) => {
  const s: TestApp = await startApp(t);
  const rssBounded = memoryGuard(t);
  const started = Date.now();
  let aliveId = 10_000_000;

  await t.test('POST /plants bodies, content types, encodings and headers', async (t) => {
    await check(
      t,
      3_000,
      fc.asyncProperty(plantBody, oddContentType, extraHeaders, async (body, type, headers) => {
        await fetchChecked(
          `${s.url}/plants`,
          { method: 'POST', headers: { authorization: `Bearer ${s.token.all}`, ...(type !== '' && { 'content-type': type }), ...headers }, body },
          `POST /plants ${type} ${JSON.stringify(headers)} ${String(body).slice(0, 200)}`,
        );
      }),
    );
    await assertStillServes(s, aliveId++);
  });

  await t.test('GET /plants with query junk and GET/DELETE /plants/{id} with path junk', async (t) => {
    const op = fc.oneof(
      queryJunk.map((q) => ({ method: 'GET', path: `/plants${q}` })),
      fc.tuple(fc.constantFrom('GET', 'DELETE'), pathJunk, queryJunk).map(([method, id, q]) => ({ method, path: `/plants/${id}${q}` })),
      fc.tuple(fc.constantFrom('GET', 'DELETE', 'POST', 'PUT', 'PATCH'), pathJunk, pathJunk).map(([method, a, b]) => ({ method, path: `/plants/${a}/${b}` })),
    );
    await check(
      t,
      2_500,
      fc.asyncProperty(op, fc.constantFrom('all', 'read', 'write') as fc.Arbitrary<'all' | 'read' | 'write'>, async ({ method, path }, who) => {
        await fetchChecked(`${s.url}${path}`, { method, headers: { authorization: `Bearer ${s.token[who]}` } }, `${method} ${path.slice(0, 300)}`);
      }),
    );
    await assertStillServes(s, aliveId++);
  });

  await t.test('operational endpoints with query junk, wrong methods and bodies', async (t) => {
    const metricsToken = (await s.tokens.create({ name: 'metrics', scopes: ['metrics:read'] })).secret;
    const op = fc.tuple(
      fc.constantFrom('/healthz', '/readyz', '/openapi.json', '/openapi.yaml', '/metrics', '/', '/plants/', '//plants', '/PLANTS', '/plants%2F1', '/%2e%2e/plants'),
      queryJunk,
      fc.constantFrom('GET', 'GET', 'GET', 'POST', 'DELETE', 'PUT', 'OPTIONS', 'PATCH'),
      fc.option(fc.string({ maxLength: 100 }), { nil: undefined }),
      fc.constantFrom(s.token.all, metricsToken),
    );
    await check(
      t,
      1_000,
      fc.asyncProperty(op, async ([path, q, method, body, token]) => {
        const withBody = body !== undefined && method !== 'GET';
        await fetchChecked(
          `${s.url}${path}${q}`,
          { method, headers: { authorization: `Bearer ${token}`, ...(withBody && { 'content-type': 'application/json' }) }, ...(withBody && { body }) },
          `${method} ${path}${q.slice(0, 200)}`,
        );
      }),
    );
    await assertStillServes(s, aliveId++);
  });

  rssBounded();
  t.diagnostic(`${counted.cases} cases in ${((Date.now() - started) / 1000).toFixed(1)} s`);
});
