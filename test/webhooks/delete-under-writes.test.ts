// A subscription deleted while its deliveries are being sent and recorded, a delivery retried and plants deleted,
// 20 times over: every request is answered for what it is, never 503. On PostgreSQL an attempt locks its delivery
// and then its subscription; a delete that took them the other way round deadlocked with it (40P01), which was
// answered "the store is unavailable".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startApp } from '../helpers/app.js';
import { startReceiver } from '../helpers/receiver.js';
import { eventually } from '../helpers/sleep.js';

const ROUNDS = 20;
const PLANTS = 20;

test(`${ROUNDS} rounds of a subscription deleted while its deliveries are recorded, beside a retry and ${PLANTS} plant deletes: none answered 503`, { timeout: 240_000 }, async (t) => {
  const s = await startApp(t, { config: { webhookAllowedHosts: ['127.0.0.1'] } });
  const manage = (await s.tokens.create({ name: 'hooks', scopes: ['webhooks:manage', 'plants:read'] })).secret;
  const call = async (path: string, method = 'GET', body?: unknown, token = manage) => {
    const res = await fetch(`${s.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: await res.text() };
  };
  const refused: string[] = [];
  const answered = async (what: string, r: Promise<{ status: number; body: string }>, expected: number) => {
    const got = await r;
    if (got.status !== expected) refused.push(`${what}: ${got.status} ${got.body}`);
    return got;
  };

  // The retried subscription's receiver answers 503 with an hour's Retry-After: its deliveries wait for a retry.
  const busy = await startReceiver(t, '', () => ({ status: 503, headers: { 'retry-after': '3600' } }));
  const waiting = JSON.parse((await answered('the waiting subscription', call('/webhooks', 'POST', { url: busy.url, events: ['plantUpdated'] }), 201)).body) as { id: string };
  assert.deepEqual(refused, []);
  const fast = await startReceiver(t, '', () => ({ status: 204 }));

  let nextId = 1;
  // Only this plant is ever updated: the waiting subscription has one delivery.
  await answered('a first plant', s.postPlant({ id: nextId, name: 'first' }).then(async (r) => ({ status: r.status, body: await r.text() })), 200);
  await answered('its update', call(`/plants/${nextId++}`, 'PUT', { name: 'first', tag: 'updated' }, s.token.write), 200);
  type Listed = { id: string; attempts: unknown[] };
  let listed = '';
  const [delivery] = await eventually(async () => {
    listed = (await call(`/webhooks/${waiting.id}/deliveries`)).body;
    const list = JSON.parse(listed) as Listed[];
    return list.length === 1 && list[0]!.attempts.length > 0 && list;
  }, () => `the waiting delivery with its first attempt recorded: ${listed}`, 20_000);

  for (let round = 0; round < ROUNDS; round++) {
    const sub = JSON.parse((await answered('a subscription', call('/webhooks', 'POST', { url: fast.url }), 201)).body) as { id: string };
    const ids = Array.from({ length: PLANTS }, () => nextId++);
    await Promise.all(ids.map((id) => answered('a plant', s.postPlant({ id, name: `p${id}` }).then(async (r) => ({ status: r.status, body: await r.text() })), 200)));
    // Its deliveries are being sent and recorded now: the delete meets them.
    const attemptsBefore = busy.requests.length;
    await Promise.all([
      answered('the subscription delete', call(`/webhooks/${sub.id}`, 'DELETE'), 204),
      answered('the retry', call(`/webhooks/${waiting.id}/deliveries/${delivery!.id}/retry`, 'POST'), 202),
      ...ids.map((id) => answered('a plant delete', call(`/plants/${id}`, 'DELETE', undefined, s.token.write), 204)),
    ]);
    assert.deepEqual(refused, [], `round ${round + 1}`);
    assert.equal((await call(`/webhooks/${sub.id}`)).status, 404);
    // The retry is sent at once; once its attempt is recorded, the next round may retry it again.
    await busy.until((r) => r.requests.length > attemptsBefore, 20_000);
    await eventually(async () => {
      const d = (JSON.parse((await call(`/webhooks/${waiting.id}/deliveries`)).body) as Listed[]).find((x) => x.id === delivery!.id);
      return d!.attempts.length >= round + 2;
    }, `the retried delivery's attempt ${round + 2} recorded`, 20_000);
  }
});
