// Webhook subscriptions over HTTP: POST /webhooks answers 201 with the secret once, reads never show it,
// bad or dangerous URLs are 400 (SSRF guard), /webhooks needs webhooks:manage, and subscribing plants:read too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import type { NewWebhook, PlantStoreClient } from '@plant-store/client';
import { errorOf, startApp, type TestApp } from '../helpers/app.js';
import { clientError, clientFor } from '../helpers/client.js';
import { testClock } from '../helpers/clock.js';

const SECRET = /^whsec_[A-Za-z0-9+/=_-]{20,}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

interface Api {
  s: TestApp;
  manage: string;
  /** The typed client with a webhooks:manage and plants:read token. */
  hooks: PlantStoreClient;
  /** Raw fetch, for what the client cannot or should not send (bad query values, methods, no body). */
  call(method: string, path: string, body?: unknown, token?: string | null): Promise<Response>;
}

async function api(t: Parameters<typeof startApp>[0], options: Parameters<typeof startApp>[1] = {}): Promise<Api> {
  const s = await startApp(t, options);
  const manage = (await s.tokens.create({ name: 'hooks', scopes: ['webhooks:manage', 'plants:read'] })).secret;
  return {
    s,
    manage,
    hooks: clientFor(s, manage),
    call(method, path, body, token = manage) {
      return fetch(`${s.url}${path}`, {
        method,
        headers: {
          ...(token !== null && { authorization: `Bearer ${token}` }),
          ...(body !== undefined && { 'content-type': 'application/json' }),
        },
        ...(body !== undefined && { body: typeof body === 'string' ? body : JSON.stringify(body) }),
      });
    },
  };
}

test('POST /webhooks answers 201 with the subscription, its whsec_ secret and a Location; reads never show the secret', async (t) => {
  const a = await api(t);
  const res = await a.hooks.POST('/webhooks', { body: { url: 'https://1.1.1.1/hooks/plants', description: 'inventory sync' } });
  assert.equal(res.response.status, 201);
  const created = res.data as unknown as Record<string, unknown>;
  assert.match(String(created.id), /^wh_[A-Za-z0-9_-]+$/);
  assert.equal(res.response.headers.get('location'), `/webhooks/${created.id}`);
  assert.match(String(created.secret), SECRET);
  // The secret is usable by an off-the-shelf Standard Webhooks library.
  assert.doesNotThrow(() => new StandardWebhook(String(created.secret)));
  assert.equal(created.url, 'https://1.1.1.1/hooks/plants');
  assert.equal(created.description, 'inventory sync');
  assert.deepEqual(created.events, ['newPlant', 'plantUpdated', 'plantDeleted']);
  assert.equal(created.active, true);
  assert.equal('disabledReason' in created, false);
  assert.match(String(created.createdAt), ISO);
  assert.ok(Math.abs(Date.parse(String(created.createdAt)) - Date.now()) < 60_000);

  const { secret, ...withoutSecret } = created;
  assert.deepEqual((await a.hooks.GET('/webhooks/{id}', { params: { path: { id: String(created.id) } } })).data, withoutSecret);
  assert.deepEqual((await a.hooks.GET('/webhooks')).data, [withoutSecret]);
  // And in the raw text of the reads no secret appears anywhere.
  const one = await a.call('GET', `/webhooks/${created.id}`);
  assert.equal(one.status, 200);
  const oneText = await one.text();
  assert.deepEqual(JSON.parse(oneText), withoutSecret);
  const all = await a.call('GET', '/webhooks');
  assert.equal(all.status, 200);
  const allText = await all.text();
  assert.deepEqual(JSON.parse(allText), [withoutSecret]);
  for (const text of [oneText, allText]) {
    assert.ok(!text.includes(String(secret)), 'the secret leaked into a read');
    assert.ok(!text.includes('whsec_'), 'a secret leaked into a read');
    assert.ok(!text.includes('"secret"'), 'a secret field in a read');
  }

  // Each subscription has its own secret and id; description is optional and then absent.
  const second = (await a.hooks.POST('/webhooks', { body: { url: 'https://1.1.1.1/other' } })).data as unknown as Record<string, unknown>;
  assert.match(String(second.secret), SECRET);
  assert.notEqual(second.id, created.id);
  assert.notEqual(second.secret, secret);
  assert.equal('description' in second, false);
});

test('GET /webhooks lists subscriptions oldest first', async (t) => {
  const clock = testClock();
  const a = await api(t, { clock });
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) {
    const res = await a.hooks.POST('/webhooks', { body: { url: `https://1.1.1.1/hook/${i}` } });
    assert.equal(res.response.status, 201);
    ids.push(res.data!.id);
    // Creation times are kept to the millisecond; apart by more than that, the order is the creation order.
    clock.advance(3);
  }
  const listed = await a.hooks.GET('/webhooks');
  assert.equal(listed.response.status, 200);
  const list = listed.data!;
  assert.deepEqual(
    list.map((w) => w.id),
    ids,
  );
  assert.deepEqual(
    list.map((w) => w.url),
    ids.map((_, i) => `https://1.1.1.1/hook/${i}`),
  );
  const empty = await api(t);
  assert.deepEqual((await empty.hooks.GET('/webhooks')).data, []);
});

test('DELETE /webhooks/{id} answers 204 with no body, then the subscription is gone (404)', async (t) => {
  const a = await api(t);
  const { id } = (await a.hooks.POST('/webhooks', { body: { url: 'https://1.1.1.1/x' } })).data!;
  const keep = (await a.hooks.POST('/webhooks', { body: { url: 'https://1.1.1.1/y' } })).data!;
  const del = await a.hooks.DELETE('/webhooks/{id}', { params: { path: { id } } });
  assert.equal(del.response.status, 204);
  assert.equal(del.data, undefined);
  assert.equal(del.error, undefined);
  assert.equal(await del.response.text(), '');
  const path = { params: { path: { id } } };
  for (const [what, result] of [
    ['GET', await a.hooks.GET('/webhooks/{id}', path)],
    ['DELETE', await a.hooks.DELETE('/webhooks/{id}', path)],
    ['GET deliveries', await a.hooks.GET('/webhooks/{id}/deliveries', path)],
  ] as const) {
    assert.match(clientError(result, 404, what).message, /webhook/i);
  }
  assert.deepEqual(
    (await a.hooks.GET('/webhooks')).data?.map((w) => w.id),
    [keep.id],
  );
});

test('unknown subscriptions and deliveries are 404 Error bodies; ids longer than 64 characters are 400', async (t) => {
  const a = await api(t);
  const { id } = (await a.hooks.POST('/webhooks', { body: { url: 'https://1.1.1.1/x' } })).data!;
  const one = (id: string) => ({ params: { path: { id } } });
  const retry = (id: string, deliveryId: string) => a.hooks.POST('/webhooks/{id}/deliveries/{deliveryId}/retry', { params: { path: { id, deliveryId } } });
  const cases: Array<[string, () => Promise<{ data?: unknown; error?: unknown; response: Response }>, number, RegExp]> = [
    ['GET /webhooks/wh_nope', () => a.hooks.GET('/webhooks/{id}', one('wh_nope')), 404, /subscription/],
    ['DELETE /webhooks/wh_nope', () => a.hooks.DELETE('/webhooks/{id}', one('wh_nope')), 404, /subscription/],
    ['GET /webhooks/wh_nope/deliveries', () => a.hooks.GET('/webhooks/{id}/deliveries', one('wh_nope')), 404, /subscription/],
    ['POST /webhooks/wh_nope/deliveries/dlv_nope/retry', () => retry('wh_nope', 'dlv_nope'), 404, /subscription/],
    [`POST /webhooks/${id}/deliveries/dlv_nope/retry`, () => retry(id, 'dlv_nope'), 404, /delivery/i],
    ['GET /webhooks/x*65', () => a.hooks.GET('/webhooks/{id}', one('x'.repeat(65))), 400, /params\/id/],
    [`POST /webhooks/${id}/deliveries/d*65/retry`, () => retry(id, 'd'.repeat(65)), 400, /deliveryId/],
  ];
  for (const [what, result, status, message] of cases) {
    assert.match(clientError(await result(), status, what).message, message, what);
  }
  // Raw: limit values the typed query cannot carry (and 0, 1001, -1 alongside them).
  for (const limit of ['0', '1001', '-1', 'abc', '1.5']) {
    const res = await a.call('GET', `/webhooks/${id}/deliveries?limit=${limit}`);
    assert.equal(res.status, 400, `limit=${limit}`);
    await errorOf(res);
  }
  const put = await a.call('PUT', `/webhooks/${id}`);
  assert.equal(put.status, 405);
  assert.equal(put.headers.get('allow'), 'DELETE, GET, HEAD');
});

test('bad subscriptions are 400 and store nothing: shape, scheme, length, credentials', async (t) => {
  const a = await api(t);
  const cases: Array<[string, unknown, RegExp]> = [
    ['missing url', { description: 'x' }, /required property 'url'/],
    ['url not a string', { url: 42 }, /body\/url/],
    ['not a URL', { url: 'not a url' }, /body\/url/],
    ['relative URL', { url: '/hooks' }, /body\/url/],
    ['ftp', { url: 'ftp://1.1.1.1/hooks' }, /http or https/],
    ['javascript:', { url: 'javascript:alert(1)' }, /http or https/],
    ['file:', { url: 'file:///etc/passwd' }, /http or https/],
    ['data:', { url: 'data:text/plain,hi' }, /http or https/],
    ['too long', { url: `https://1.1.1.1/${'a'.repeat(2048)}` }, /2048/],
    ['credentials', { url: 'https://user:pass@1.1.1.1/hooks' }, /credentials/],
    ['user only', { url: 'https://user@1.1.1.1/hooks' }, /credentials/],
    ['description too long', { url: 'https://1.1.1.1/hooks', description: 'd'.repeat(501) }, /description/],
    ['description not a string', { url: 'https://1.1.1.1/hooks', description: 5 }, /description/],
    ['body an array', [{ url: 'https://1.1.1.1/hooks' }], /JSON object/],
  ];
  for (const [name, body, message] of cases) {
    // Not NewWebhooks as the types see them: sending them anyway is the point.
    const result = await a.hooks.POST('/webhooks', { body: body as NewWebhook });
    assert.match(clientError(result, 400, name).message, message, name);
  }
  // Raw: no body at all, and a text/plain body.
  const noBody = await a.call('POST', '/webhooks');
  assert.equal(noBody.status, 400);
  await errorOf(noBody);
  const text = await fetch(`${a.s.url}/webhooks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${a.manage}`, 'content-type': 'text/plain' },
    body: 'https://1.1.1.1/hooks',
  });
  assert.equal(text.status, 415);
  await errorOf(text);
  assert.deepEqual((await a.hooks.GET('/webhooks')).data, []);
  // Right at the limits is accepted.
  const longest = `https://1.1.1.1/${'a'.repeat(2048 - 'https://1.1.1.1/'.length)}`;
  const ok = await a.hooks.POST('/webhooks', { body: { url: longest, description: 'd'.repeat(500) } });
  assert.equal(ok.response.status, 201, JSON.stringify(ok.error));
  assert.equal(ok.data?.url, longest);
});

test('by default loopback, private, link-local and metadata hosts are refused with 400 (SSRF guard)', async (t) => {
  const a = await api(t);
  const urls = [
    'http://127.0.0.1/hook',
    'http://127.1.2.3:8080/hook',
    'http://localhost/hook',
    'http://[::1]/hook',
    'http://0.0.0.0/hook',
    'http://10.0.0.1/hook',
    'http://172.16.5.4/hook',
    'http://192.168.1.10/hook',
    'http://169.254.169.254/latest/meta-data/',
    'http://[fe80::1]/hook',
    'http://[fd00::1]/hook',
    'http://[::ffff:127.0.0.1]/hook',
    'http://[::ffff:169.254.169.254]/hook',
    'http://100.100.100.200/hook',
    'http://metadata.google.internal/computeMetadata/v1/',
    'http://2130706433/hook', // 127.0.0.1 as one number
    'http://0x7f.1/hook',
  ];
  const results = await Promise.all(urls.map(async (url) => [url, await a.hooks.POST('/webhooks', { body: { url } })] as const));
  for (const [url, result] of results) clientError(result, 400, url);
  assert.deepEqual((await a.hooks.GET('/webhooks')).data, []);
});

test('refusals of a host are one message that names neither its addresses nor the resolver error (no DNS oracle)', async (t) => {
  const a = await api(t);
  const urls = [
    'http://localhost/hook', // resolves to loopback
    'http://nosuchhost.invalid/hook', // does not resolve
    'http://127.0.0.1/hook',
    'http://10.0.0.1/hook',
    'http://168.63.129.16/hook', // Azure's host endpoint, a public address
    'http://[fd00:ec2::254]/hook',
  ];
  const messages = new Set<string>();
  for (const url of urls) {
    const { message } = clientError(await a.hooks.POST('/webhooks', { body: { url } }), 400, url);
    assert.doesNotMatch(message, /127\.0\.0\.1|::1|10\.0\.0\.1|168\.63|fd00|ENOTFOUND|EAI_|resolves to|loopback|private|localhost|nosuchhost/i, url);
    messages.add(message);
  }
  assert.equal(messages.size, 1, [...messages].join(' | '));
  assert.match([...messages][0]!, /WEBHOOK_ALLOWED_HOSTS/);
  assert.deepEqual((await a.hooks.GET('/webhooks')).data, []);
});

test('WEBHOOK_ALLOWED_HOSTS opens exactly the named hosts', async (t) => {
  const a = await api(t, { config: { webhookAllowedHosts: ['127.0.0.1'] } });
  const ok = await a.hooks.POST('/webhooks', { body: { url: 'http://127.0.0.1:9/hook' } });
  assert.equal(ok.response.status, 201, JSON.stringify(ok.error));
  assert.equal(ok.data?.url, 'http://127.0.0.1:9/hook');
  for (const url of ['http://10.0.0.1/hook', 'http://169.254.169.254/', 'http://192.168.0.1/']) {
    clientError(await a.hooks.POST('/webhooks', { body: { url } }), 400, url);
  }
  // A cloud host address stays refused even when listed.
  const azure = await api(t, { config: { webhookAllowedHosts: ['168.63.129.16', '169.254.169.254'] } });
  for (const url of ['http://168.63.129.16/machine', 'http://169.254.169.254/latest/meta-data/']) {
    clientError(await azure.hooks.POST('/webhooks', { body: { url } }), 400, url);
  }
  // Scheme and credential rules still apply to an allowed host.
  for (const url of ['ftp://127.0.0.1/hook', 'http://u:p@127.0.0.1/hook']) {
    assert.equal((await a.hooks.POST('/webhooks', { body: { url } })).response.status, 400, url);
  }
});

test('/webhooks needs webhooks:manage: no token 401, a plants token 403 insufficient_scope', async (t) => {
  const a = await api(t);
  const { id } = (await a.hooks.POST('/webhooks', { body: { url: 'https://1.1.1.1/x' } })).data!;
  const requests: Array<[string, (c: PlantStoreClient) => Promise<{ data?: unknown; error?: unknown; response: Response }>]> = [
    // Subscribing needs plants:read as well (see the next test).
    ['POST /webhooks', (c) => c.POST('/webhooks', { body: { url: 'https://1.1.1.1/y' } })],
    ['GET /webhooks', (c) => c.GET('/webhooks')],
    ['GET /webhooks/{id}', (c) => c.GET('/webhooks/{id}', { params: { path: { id } } })],
    ['DELETE /webhooks/{id}', (c) => c.DELETE('/webhooks/{id}', { params: { path: { id } } })],
    ['GET /webhooks/{id}/deliveries', (c) => c.GET('/webhooks/{id}/deliveries', { params: { path: { id } } })],
    ['POST /webhooks/{id}/deliveries/{deliveryId}/retry', (c) => c.POST('/webhooks/{id}/deliveries/{deliveryId}/retry', { params: { path: { id, deliveryId: 'dlv_x' } } })],
  ];
  for (const [what, send] of requests) {
    const anonymous = await send(clientFor(a.s));
    clientError(anonymous, 401, what);
    assert.match(anonymous.response.headers.get('www-authenticate') ?? '', /^Bearer realm="plant-store"/);
    for (const token of [a.s.token.write, a.s.token.all]) {
      const result = await send(clientFor(a.s, token));
      clientError(result, 403, what);
      const challenge = result.response.headers.get('www-authenticate') ?? '';
      assert.match(challenge, /error="insufficient_scope"/);
      assert.match(challenge, what === 'POST /webhooks' ? /scope="webhooks:manage plants:read"/ : /scope="webhooks:manage"/);
    }
  }
  // Nothing was created or deleted by the refused requests.
  assert.deepEqual(
    (await a.hooks.GET('/webhooks')).data?.map((w) => w.id),
    [id],
  );
  // And webhooks:manage alone does not write plants.
  const plant = await a.hooks.POST('/plants', { body: { id: 1n, name: 'fern' } });
  clientError(plant, 403);
});

test('subscribing needs plants:read as well as webhooks:manage: either alone is 403 naming the missing scope, both 201', async (t) => {
  const a = await api(t);
  const only = async (scopes: ('webhooks:manage' | 'plants:read')[]) => (await a.s.tokens.create({ name: scopes.join('+'), scopes })).secret;
  const body = { url: 'https://1.1.1.1/hooks' };
  for (const [scopes, missing] of [[['webhooks:manage'], 'plants:read'], [['plants:read'], 'webhooks:manage']] as const) {
    const res = await a.call('POST', '/webhooks', body, await only([...scopes]));
    assert.equal(res.status, 403, scopes.join(' '));
    assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="plant-store", error="insufficient_scope", scope="webhooks:manage plants:read"');
    assert.deepEqual(await res.json(), {
      error: 403,
      message: `This operation needs the scopes webhooks:manage and plants:read; the token lacks ${missing}.`,
    });
  }
  // A webhooks:manage-only token still manages what exists: lists, reads, deletes (no plant data is shown).
  const manageOnly = await only(['webhooks:manage']);
  assert.equal((await a.s.store.webhooks.listSubscriptions()).length, 0, 'a refused request created nothing');
  const created = await a.call('POST', '/webhooks', body, await only(['webhooks:manage', 'plants:read']));
  assert.equal(created.status, 201);
  const { id } = (await created.json()) as { id: string };
  assert.equal((await a.call('GET', `/webhooks/${id}`, undefined, manageOnly)).status, 200);
  assert.equal((await a.call('DELETE', `/webhooks/${id}`, undefined, manageOnly)).status, 204);
});
