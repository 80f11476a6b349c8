// The dispatcher's own mechanics: wake() is coalesced, stop() is bounded and leaves abandoned sends to be
// sent again, the per-subscription cap holds; and the webhook settings parse as documented.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { ConfigError, describeConfig, loadConfig } from '../../src/config.js';
import { openStore } from '../../src/storage/open-store.js';
import type { WebhookStore } from '../../src/webhooks/delivery.js';
import { createDispatcher } from '../../src/webhooks/dispatcher.js';
import { sequenced } from '../helpers/events.js';
import { tempDir, freshDatabaseUrl } from '../helpers/app.js';
import { eventually } from '../helpers/sleep.js';
import { addSubscription } from '../helpers/webhooks.js';
import { startReceiver } from '../helpers/receiver.js';

async function storeWithPlants(t: Parameters<typeof tempDir>[0], url: string, count: number) {
  const { store } = await openStore((await freshDatabaseUrl(t)));
  t.after(() => store.close());
  const sub = await addSubscription(store, url);
  await Promise.all(Array.from({ length: count }, (_, i) => store.createPlant({ id: BigInt(i + 1), name: 'p' })));
  await sequenced(store);
  return { store, sub };
}

test('wake() is cheap and coalesced: ten thousand calls in one turn cost a couple of claims', async (t) => {
  const { store } = await openStore((await freshDatabaseUrl(t)));
  t.after(() => store.close());
  let claims = 0;
  let settled = 0;
  const counting: WebhookStore = Object.create(store.webhooks, {
    claimDueDeliveries: {
      value: (input: Parameters<WebhookStore['claimDueDeliveries']>[0]) => (claims++, store.webhooks.claimDueDeliveries(input).finally(() => settled++)),
    },
  });
  // Idle: every claim started has answered, and a turn of the loop went by without a new one.
  const idleAfter = (n: number) => eventually(async () => {
    if (claims <= n || settled < claims) return false;
    const seen = claims;
    await new Promise((r) => setImmediate(r));
    return claims === seen && settled === claims;
  }, `a claim after ${n}, and the dispatcher idle again`);
  const d = createDispatcher({ store: counting, timeoutMs: 1_000, allowedHosts: [], pollMs: 60_000 });
  d.start();
  await idleAfter(0);
  const before = claims;
  const t0 = performance.now();
  for (let i = 0; i < 10_000; i++) d.wake();
  const cost = performance.now() - t0;
  await idleAfter(before);
  await d.stop();
  t.diagnostic(`10000 wake() calls took ${cost.toFixed(2)} ms and caused ${claims - before} claim(s)`);
  assert.ok(claims - before <= 2, `${claims - before} claims`);
  // About 0.1 µs a call when idle; generous for a loaded test machine.
  assert.ok(cost < 500, `${cost} ms`);
  d.wake(); // after stop: a no-op
});

test('at most perSubscription sends are in flight to one receiver', async (t) => {
  let inFlight = 0;
  let peak = 0;
  let secret = '';
  const rx = await startReceiver(t, () => secret, () => {
    inFlight++;
    peak = Math.max(peak, inFlight);
    setTimeout(() => inFlight--, 40);
    return { status: 200, delayMs: 40 };
  });
  const { store, sub } = await storeWithPlants(t, rx.url, 30);
  secret = sub.secret;
  const d = createDispatcher({ store: store.webhooks, timeoutMs: 2_000, allowedHosts: ['127.0.0.1'], perSubscription: 3, concurrency: 32 });
  assert.equal(await d.runOnce(), 30);
  assert.equal(rx.byId.size, 30);
  assert.equal(peak, 3);
  await d.stop();
});

test('stop() waits for in-flight sends, but only for stopGraceMs; an abandoned send stays leased and pending', async (t) => {
  let secret = '';
  const rx = await startReceiver(t, () => secret, () => 'hang');
  const { store, sub } = await storeWithPlants(t, rx.url, 1);
  secret = sub.secret;
  const d = createDispatcher({ store: store.webhooks, timeoutMs: 30_000, allowedHosts: ['127.0.0.1'], stopGraceMs: 300 });
  d.start();
  await rx.until((r) => r.requests.length === 1);
  const t0 = Date.now();
  await d.stop();
  const took = Date.now() - t0;
  assert.ok(took >= 250 && took < 2_000, `stop took ${took} ms`);
  const [delivery] = await store.webhooks.listDeliveries(sub.id, 10);
  assert.equal(delivery!.status, 'pending');
  assert.deepEqual(delivery!.attempts, [], 'an abandoned send is not recorded as a failure');
  // Still leased (timeout + margin), so another dispatcher does not send it at once...
  assert.deepEqual(await store.webhooks.claimDueDeliveries({ now: new Date(), leaseUntil: new Date(Date.now() + 1), limit: 9, perSubscription: 9, skipSubscriptions: [] }), []);
  // ...but does once the lease has expired.
  const later = new Date(Date.now() + 36_000);
  assert.equal((await store.webhooks.claimDueDeliveries({ now: later, leaseUntil: later, limit: 9, perSubscription: 9, skipSubscriptions: [] })).length, 1);
});

test('the webhook settings: defaults, parsing, and every bad value named', () => {
  const defaults = loadConfig({});
  assert.equal(defaults.webhookTimeoutMs, 15_000);
  assert.deepEqual(defaults.webhookAllowedHosts, []);
  assert.equal(defaults.webhookConcurrency, 32);
  assert.ok(describeConfig(defaults).includes('WEBHOOK_ALLOWED_HOSTS='));
  const c = loadConfig({ WEBHOOK_TIMEOUT_MS: '2500', WEBHOOK_ALLOWED_HOSTS: ' 127.0.0.1, Receiver.Internal ,[::1],::1 ,', WEBHOOK_CONCURRENCY: '8' });
  assert.equal(c.webhookTimeoutMs, 2_500);
  assert.deepEqual(c.webhookAllowedHosts, ['127.0.0.1', 'receiver.internal', '[::1]', '::1']);
  assert.equal(c.webhookConcurrency, 8);
  assert.ok(describeConfig(c).includes('WEBHOOK_ALLOWED_HOSTS=127.0.0.1,receiver.internal,[::1],::1'));
  for (const [env, name] of [
    [{ WEBHOOK_TIMEOUT_MS: 'soon' }, 'WEBHOOK_TIMEOUT_MS'],
    [{ WEBHOOK_TIMEOUT_MS: '10' }, 'WEBHOOK_TIMEOUT_MS'],
    [{ WEBHOOK_ALLOWED_HOSTS: 'http://127.0.0.1' }, 'WEBHOOK_ALLOWED_HOSTS'],
    [{ WEBHOOK_ALLOWED_HOSTS: 'a b' }, 'WEBHOOK_ALLOWED_HOSTS'],
    [{ WEBHOOK_ALLOWED_HOSTS: 'host/path' }, 'WEBHOOK_ALLOWED_HOSTS'],
    [{ WEBHOOK_CONCURRENCY: '0' }, 'WEBHOOK_CONCURRENCY'],
  ] as const) {
    assert.throws(() => loadConfig(env), (err: unknown) => err instanceof ConfigError && new RegExp(`^\\s*${name}: `, 'm').test(err.message), JSON.stringify(env));
  }
});
