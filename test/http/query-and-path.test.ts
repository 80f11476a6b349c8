// What a request's query and path may hold, as the document states it: a query parameter the operation does
// not declare is a 400 naming it (not a filter silently ignored), integers are canonical decimals, and a path
// with an empty segment (`/plants/`) names no resource.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startApp } from '../helpers/app.js';
import { assertErrorText } from './support.js';

test('a query parameter the operation does not declare is 400 naming it and the ones it takes', async (t) => {
  const s = await startApp(t);
  assert.equal((await s.postPlant({ id: 1, name: 'Monstera deliciosa', tag: 'tropical' })).status, 200);
  const auth = { authorization: `Bearer ${s.token.all}` };
  const cases: Array<[string, RegExp]> = [
    // Would read as a filter that matched everything.
    ['/plants?name=Monstera', /^Unknown query parameter 'name': this operation takes limit, after, tag, q, sort, after_name\.$/],
    // Names are case-sensitive.
    ['/plants?limit=5&TAG=tropical', /^Unknown query parameter 'TAG': /],
    ['/plants/1?fields=name', /^Unknown query parameter 'fields': this operation takes no query parameters\.$/],
    ['/healthz?probe', /^Unknown query parameter 'probe': this operation takes no query parameters\.$/],
  ];
  for (const [path, message] of cases) {
    const res = await fetch(`${s.url}${path}`, { headers: auth });
    assert.equal(res.status, 400, path);
    assert.match(assertErrorText(await res.text(), 400).message, message, path);
  }
  // The declared ones still work.
  const ok = await fetch(`${s.url}/plants?limit=5&tag=tropical`, { headers: auth });
  assert.equal(ok.status, 200);
  assert.deepEqual(await ok.json(), [{ id: 1, name: 'Monstera deliciosa', tag: 'tropical', version: 2 }]);
});

test('path and query integers are canonical decimals: a leading zero or plus, a signed zero, an exponent, a fraction are 400', async (t) => {
  const s = await startApp(t);
  const auth = { authorization: `Bearer ${s.token.all}` };
  for (const path of ['/plants/0100', '/plants/+5', '/plants/1e3', '/plants/5.0', '/plants?limit=5.0', '/plants?limit=1e1', '/plants?after=+1', '/plants?after=01', '/plants/-0', '/plants/-00', '/plants?after=-0', '/plants?limit=-0', '/events?limit=-0']) {
    const res = await fetch(`${s.url}${path}`, { headers: auth });
    assert.equal(res.status, 400, path);
    assert.match(assertErrorText(await res.text(), 400).message, /must be an integer written as a canonical decimal \(no leading zero or plus sign, no -0, fraction or exponent\), such as 42\.$/, path);
  }
  for (const path of ['/plants/100', '/plants/0', '/plants/-5']) {
    const res = await fetch(`${s.url}${path}`, { headers: auth });
    assert.equal(res.status, 404, `${path} is a well-formed id of no plant`);
    await res.arrayBuffer();
  }
  // Every method reads the path the same way.
  for (const method of ['PUT', 'PATCH', 'DELETE']) {
    const type = method === 'PATCH' ? 'application/merge-patch+json' : 'application/json';
    const init = method === 'DELETE' ? { method, headers: auth } : { method, headers: { ...auth, 'content-type': type }, body: '{"name":"n"}' };
    const res = await fetch(`${s.url}/plants/-0`, init);
    assert.equal(res.status, 400, `${method} /plants/-0`);
    assert.match(assertErrorText(await res.text(), 400).message, /must be an integer/, method);
  }
});

test('/plants/ and /webhooks/ name no resource: 404, with or without a token', async (t) => {
  const s = await startApp(t);
  for (const [method, path] of [['GET', '/plants/'], ['DELETE', '/plants/'], ['GET', '/webhooks/'], ['GET', '/webhooks//deliveries']] as const) {
    for (const headers of [{}, { authorization: `Bearer ${s.token.all}` }] as Record<string, string>[]) {
      const res = await fetch(`${s.url}${path}`, { method, headers });
      assert.equal(res.status, 404, `${method} ${path}`);
      assert.equal(assertErrorText(await res.text(), 404).message, `No such resource: ${method} ${path}.`);
    }
  }
});
