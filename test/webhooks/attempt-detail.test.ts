// Each attempt's request and answer as GET /webhooks/{id}/deliveries shows them, against a real receiver on
// 127.0.0.1: the request is what the receiver got (its signature verifies with the headers shown), the answer
// is what the receiver sent, bounded (headers, a 1 KiB excerpt marked when cut), and an attempt that got no
// answer shows none.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import type { PlantStoreClient, WebhookDelivery } from '@plant-store/client';
import { startApp, type TestApp } from '../helpers/app.js';
import { clientFor } from '../helpers/client.js';
import { startReceiver, type Reply } from '../helpers/receiver.js';
import { subscribe } from '../helpers/webhooks.js';
import { eventually } from '../helpers/sleep.js';

type Attempt = WebhookDelivery['attempts'][number];

async function setUp(t: TestContext): Promise<{ s: TestApp; call: PlantStoreClient }> {
  const s = await startApp(t, { config: { webhookAllowedHosts: ['127.0.0.1'] } });
  const call = clientFor(s, (await s.tokens.create({ name: 'hooks', scopes: ['webhooks:manage', 'plants:read'] })).secret);
  return { s, call };
}

/** A receiver answering `reply`, subscribed through `call`; the subscription's id and secret, and the receiver. */
async function subscribedTo(t: TestContext, call: PlantStoreClient, reply: Reply) {
  const hook = { url: '', secret: '' };
  const rx = await startReceiver(t, () => hook.secret, () => reply);
  hook.url = rx.url;
  const sub = await subscribe(call, hook);
  t.after(() => assert.deepEqual(rx.problems, [], 'every delivery verifies'));
  return { sub, rx };
}

/** Creates plant 1 and waits for the first attempt at its delivery to `subscriptionId`. */
async function firstAttempt(s: TestApp, call: PlantStoreClient, subscriptionId: string): Promise<Attempt> {
  assert.equal((await clientFor(s, s.token.write).POST('/plants', { body: { id: 1n, name: 'Monstera', tag: 'tropical' } })).response.status, 200);
  const list = await eventually(async () => {
    const { data, response } = await call.GET('/webhooks/{id}/deliveries', { params: { path: { id: subscriptionId } } });
    assert.equal(response.status, 200);
    return data![0]?.attempts.length ? data : undefined;
  }, 'an attempt', 10_000, 20);
  return list[0]!.attempts[0]!;
}

test("an attempt shows the request the receiver got, whose signature verifies, and the receiver's answer", async (t) => {
  const { s, call } = await setUp(t);
  const { sub, rx } = await subscribedTo(t, call, {
    status: 200,
    headers: { 'content-type': 'text/html', 'x-receiver': 'greenhouse' },
    body: '<img src=x onerror=alert(1)> thanks',
  });
  const attempt = await firstAttempt(s, call, sub.id);
  assert.equal(rx.requests.length, 1);
  const got = rx.requests[0]!;

  assert.ok(attempt.request, 'the request is shown');
  assert.equal(attempt.request.body, got.body);
  for (const name of ['content-type', 'content-length', 'user-agent', 'webhook-id', 'webhook-timestamp', 'webhook-signature']) {
    assert.equal(attempt.request.headers[name], got.headers[name], name);
  }
  // Every header shown is one the receiver got, with that value.
  for (const [name, value] of Object.entries(attempt.request.headers)) assert.equal(got.headers[name], value, name);
  // The headers shown and the body verify with the secret given at creation: they are what was signed.
  new StandardWebhook(sub.secret).verify(attempt.request.body, attempt.request.headers);
  assert.equal(JSON.stringify(attempt).includes(sub.secret), false, 'the secret is never shown');

  assert.equal(attempt.statusCode, 200);
  assert.ok(attempt.response, 'the answer is shown');
  assert.equal(attempt.response.headers['content-type'], 'text/html');
  assert.equal(attempt.response.headers['x-receiver'], 'greenhouse');
  assert.equal(attempt.response.excerpt, '<img src=x onerror=alert(1)> thanks');
  assert.equal('truncated' in attempt.response, false);
});

test("a large answer is cut to its first KiB, whole characters, and its headers are bounded", async (t) => {
  const { s, call } = await setUp(t);
  const headers: Record<string, string> = { 'content-type': 'text/plain; charset=utf-8', 'x-long': 'v'.repeat(1000) };
  for (let i = 0; i < 60; i++) headers[`x-h${i}`] = String(i);
  // Two bytes per character, after one byte: the 1 KiB bound falls inside a character.
  const body = 'a' + 'é'.repeat(3000);
  const { sub } = await subscribedTo(t, call, { status: 503, headers, body });
  const attempt = await firstAttempt(s, call, sub.id);

  assert.equal(attempt.statusCode, 503);
  const answer = attempt.response!;
  assert.equal(answer.truncated, true);
  assert.equal(answer.excerpt, 'a' + 'é'.repeat(511));
  assert.ok(Buffer.byteLength(answer.excerpt) <= 1024);
  assert.equal(Object.keys(answer.headers).length, 50);
  assert.equal(answer.headers['x-long'], 'v'.repeat(256));
  assert.equal(answer.headers['content-type'], 'text/plain; charset=utf-8');
});

test('an attempt that got no answer shows the request it tried and no answer', async (t) => {
  const { s, call } = await setUp(t);
  // Port 1 on loopback: nothing listens there, the connection is refused.
  const sub = await subscribe(call, 'http://127.0.0.1:1/hooks');
  const attempt = await firstAttempt(s, call, sub.id);
  assert.match(attempt.error ?? '', /connection error/);
  assert.equal('statusCode' in attempt, false);
  assert.equal('response' in attempt, false);
  assert.equal(attempt.request?.headers['user-agent'], 'plant-store-webhooks/1.0');
  assert.match(attempt.request?.body ?? '', /^\{"id":1,"name":"Monstera"/);
});
