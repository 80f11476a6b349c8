// The response validation that every test process runs with (test/setup/validate-responses.ts) is on, and
// catches answers the document does not describe: a fake server on 127.0.0.1 plays a wrong plant store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ResponseValidator } from '../helpers/response-validator.js';
import { VALIDATING, installResponseValidation } from '../setup/validate-responses.js';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

async function fakeServer(t: import('node:test').TestContext, handler: Handler): Promise<string> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const answer = (status: number, type: string | null, body: string): Handler => (_req, res) => {
  res.writeHead(status, type === null ? {} : { 'content-type': type });
  res.end(body);
};

// Under `npm test` the setup module is imported into every test process; run alone, install it here.
if (!(globalThis.fetch as unknown as Record<symbol, unknown>)[VALIDATING]) {
  if (process.env.npm_lifecycle_event === 'test') throw new Error('npm test must run with --import ./dist/test/setup/validate-responses.js');
  installResponseValidation();
}

test('the document is a valid OpenAPI 3.1 document (by the OpenAPI meta-schema)', async () => {
  assert.deepEqual(await new ResponseValidator().checkDocument(), []);
});

test('a response the document describes passes, int64 ids beyond 2^53 included', async (t) => {
  const url = await fakeServer(t, answer(200, 'application/json; charset=utf-8', '[{"id":9223372036854775807,"name":"Rose","tag":"r","version":7}]'));
  const res = await fetch(`${url}/plants?limit=1`);
  assert.equal(res.status, 200);
  assert.match(await res.text(), /9223372036854775807/); // the body is still there for the test
});

const wrong: [string, string, Handler, RegExp][] = [
  ['an undeclared status', '/plants', answer(418, 'application/json', '{"error":418,"message":"teapot"}'), /status 418 is not declared/],
  ['a body that does not match the schema', '/plants', answer(200, 'application/json', '[{"id":1}]'), /does not match .*NewPlant|does not match/],
  ['an id that is not an integer', '/plants/1', answer(200, 'application/json', '{"id":1.5,"name":"x"}'), /does not match/],
  ['an undeclared content type', '/plants', answer(200, 'text/plain', '[]'), /content-type text\/plain is not declared/],
  ['no content type', '/plants', answer(200, null, '[]'), /no content-type/],
  ['a body that is not JSON', '/plants', answer(200, 'application/json', '[{'), /not JSON/],
  ['an error that is not Error-shaped', '/plants', answer(401, 'application/json', '{"message":"no"}'), /does not match/],
  ['a 404 for an unknown path that is not Error-shaped', '/nowhere', answer(404, 'text/html', '<h1>Not found</h1>'), /not in the document/],
  ['a 200 for an unknown path', '/nowhere', answer(200, 'application/json', '{}'), /not in the document, yet the answer is 200/],
  ['a 200 for a method the path does not have', '/plants', answer(200, 'application/json', '[]'), /method PUT on \/plants is not in the document/],
];

for (const [what, path, handler, reason] of wrong) {
  test(`validation rejects ${what}`, async (t) => {
    const url = await fakeServer(t, handler);
    const method = what.includes('method') ? 'PUT' : 'GET';
    await assert.rejects(fetch(`${url}${path}`, { method }), (err: Error) => {
      assert.equal(err.name, 'ConformanceError');
      assert.match(err.message, reason);
      assert.match(err.message, /openapi\/plant-store\.yaml/);
      return true;
    });
  });
}

test('an Error-shaped 404 for an unknown path, a body-less HEAD, and /docs pass', async (t) => {
  const url = await fakeServer(t, (req, res) => {
    if (req.url === '/nowhere') return answer(404, 'application/json', '{"error":404,"message":"No such resource."}')(req, res);
    if (req.url?.startsWith('/docs')) return answer(200, 'text/html', '<html></html>')(req, res);
    return answer(200, 'application/json', req.method === 'HEAD' ? '' : '{"status":"ok"}')(req, res);
  });
  assert.equal((await fetch(`${url}/nowhere`)).status, 404);
  assert.equal((await fetch(`${url}/healthz`, { method: 'HEAD' })).status, 200);
  assert.equal((await fetch(`${url}/docs/static/index.html`)).status, 200);
});

test('a request marked x-conformance: skip is not checked, and the marker is not sent', async (t) => {
  let seen: string | undefined = 'unset';
  const url = await fakeServer(t, (req, res) => {
    seen = req.headers['x-conformance'] as string | undefined;
    answer(418, 'text/plain', 'anything')(req, res);
  });
  assert.equal((await fetch(`${url}/plants`, { headers: { 'x-conformance': 'skip' } })).status, 418);
  assert.equal(seen, undefined);
});

test('headers: a required one missing, or one sent that the answer does not declare, is reported; framing and every-answer headers pass', async () => {
  const v = new ResponseValidator();
  v.checkHeaders = true;
  const error = (status: number, extra: Record<string, string>) => ({
    status,
    headers: new Headers({ 'content-type': 'application/json; charset=utf-8', 'content-length': '40', 'x-request-id': 'r1', 'x-content-type-options': 'nosniff', ...extra }),
    body: JSON.stringify({ error: status, message: 'No such plant.' }),
  });
  assert.deepEqual(await v.check('GET', '/plants/1', error(404, { 'cache-control': 'no-store', ratelimit: '"token";r=1;t=1' })), []);
  assert.match((await v.check('GET', '/plants/1', error(404, { 'x-undeclared': '1' }))).join(), /header x-undeclared is sent but not declared/);
  assert.match((await v.check('DELETE', '/plants', error(405, {}))).join(), /required header allow is missing/);
  assert.deepEqual(await v.check('DELETE', '/plants/1', error(405, { allow: 'DELETE, GET, HEAD, PATCH, PUT' })), []);
});

test('deliveries: the headers and the body a webhook declares pass; a missing or undeclared header, a body of another type or format does not', async () => {
  const v = new ResponseValidator();
  const id = 'msg_2KWPBgLlAfxdpx2AI54pPJ';
  const headers = (type: string, extra: Record<string, string> = {}) => ({
    host: '127.0.0.1:9',
    'content-type': 'application/json',
    'content-length': '10',
    'user-agent': 'plant-store',
    'webhook-id': id,
    'webhook-timestamp': '1767225600',
    'webhook-signature': 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=',
    'ce-specversion': '1.0',
    'ce-id': id,
    'ce-type': type,
    'ce-source': '/plants',
    'ce-subject': '9223372036854775807',
    'ce-time': '2026-03-14T09:26:55.012Z',
    ...extra,
  });
  const plant = '{"id":9223372036854775807,"name":"fern","version":1}';
  const deleted = '{"id":9223372036854775807,"version":2}';
  const envelope = (type: string, data: string) => `{"type":"${type}","timestamp":"2026-03-14T09:26:55.012Z","data":${data}}`;
  assert.deepEqual(await v.checkDelivery(headers('newPlant'), plant), []);
  assert.deepEqual(await v.checkDelivery(headers('newPlant'), plant, 'plain'), []);
  assert.deepEqual(await v.checkDelivery(headers('plantDeleted'), envelope('plantDeleted', deleted), 'envelope'), []);
  assert.deepEqual(await v.checkDelivery(headers('plantUpdated'), envelope('plantUpdated', plant)), []);

  const one = async (h: Record<string, string | undefined>, body: string, format?: 'plain' | 'envelope') => {
    const problems = await v.checkDelivery(h, body, format);
    assert.equal(problems.length, 1, problems.join('\n'));
    return problems[0]!;
  };
  assert.match(await one({ ...headers('newPlant'), 'webhook-signature': undefined }, plant), /required header webhook-signature is missing/);
  assert.match(await one(headers('newPlant', { 'ce-extra': 'x' }), plant), /header ce-extra is sent but not declared/);
  assert.match(await one(headers('newPlant', { 'ce-specversion': '0.3' }), plant), /header ce-specversion: 0\.3 does not match/);
  assert.match(await one(headers('newPlant'), deleted), /the body does not match/);
  assert.match(await one(headers('newPlant'), envelope('plantUpdated', plant)), /the body does not match/, 'an envelope of another type');
  assert.match(await one(headers('newPlant'), envelope('newPlant', plant), 'plain'), /oneOf\/0/, 'an envelope to a plain subscription');
  assert.match(await one(headers('plantDeleted'), deleted, 'envelope'), /oneOf\/1/, 'a plain body to an envelope subscription');
  assert.match(await one(headers('newPlant', { 'content-type': 'text/plain' }), plant), /content-type text\/plain is not declared/);
  assert.deepEqual(await v.checkDelivery(headers('plantMoved'), plant), ['a delivery whose ce-type plantMoved is not a webhook of the document']);
});
