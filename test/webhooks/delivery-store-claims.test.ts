// The webhook half of the Store port's contract, on the store under test: atomic leases (two connections claim
// concurrently, a lease expires), the per-subscription caps, skips and limit of a claim, and nextDueAt.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../../src/storage/open-store.js';
import type { Store } from '../../src/storage/store.js';
import { addSubscription } from '../helpers/webhooks.js';
import { at, freshStore, plants } from './delivery-store-support.js';

test('claims lease atomically: a leased delivery is not claimed again until its lease expires', async (t) => {
  const { store, databaseUrl } = await freshStore(t);
  const sub = await addSubscription(store, 'http://127.0.0.1:1/a');
  await plants(store, 1, 3);
  const claim = (s: Store, now: Date, limit = 10) =>
    s.webhooks.claimDueDeliveries({ now, leaseUntil: new Date(now.getTime() + 10_000), limit, perSubscription: 10, skipSubscriptions: [] });

  // A second connection to the same file (another dispatcher) claims concurrently: no delivery twice.
  const { store: other } = await openStore(databaseUrl);
  t.after(() => other.close());
  const [x, y] = await Promise.all([claim(store, at(0), 2), claim(other, at(0), 10)]);
  const ids = [...x, ...y].map((c) => c.deliveryId);
  assert.equal(ids.length, 3);
  assert.equal(new Set(ids).size, 3);
  assert.deepEqual(await claim(store, at(0)), []);
  assert.deepEqual(await claim(store, at(9_000)), []);
  // The lease expired (its dispatcher died): due again, with everything needed to send it.
  const again = await claim(store, at(10_001));
  assert.equal(again.length, 3);
  const c = again[0]!;
  assert.equal(c.subscriptionId, sub.id);
  assert.equal(c.url, sub.url);
  assert.equal(c.secret, sub.secret);
  assert.match(c.payload, /^\{"id":(\d),"name":"p\1","version":\d+\}$/);
  assert.match(c.eventId, /^msg_/);
  assert.equal(c.attemptCount, 0);
});

test('claims honour perSubscription, skipSubscriptions and limit, and spread over subscriptions', async (t) => {
  const { store } = await freshStore(t);
  const a = await addSubscription(store, 'http://127.0.0.1:1/a', 'wh_a');
  const b = await addSubscription(store, 'http://127.0.0.1:1/b', 'wh_b');
  const c = await addSubscription(store, 'http://127.0.0.1:1/c', 'wh_c');
  await plants(store, 1, 10);
  const claim = (input: { limit: number; perSubscription: number; skipSubscriptions: string[] }) =>
    store.webhooks.claimDueDeliveries({ now: at(0), leaseUntil: at(60_000), ...input });
  const count = (list: { subscriptionId: string }[]) => {
    const m: Record<string, number> = {};
    for (const x of list) m[x.subscriptionId] = (m[x.subscriptionId] ?? 0) + 1;
    return m;
  };
  // A limit smaller than the due set is spread: one of each before a second of any.
  assert.deepEqual(count(await claim({ limit: 3, perSubscription: 4, skipSubscriptions: [] })), { wh_a: 1, wh_b: 1, wh_c: 1 });
  assert.deepEqual(count(await claim({ limit: 100, perSubscription: 2, skipSubscriptions: [b.id] })), { wh_a: 2, wh_c: 2 });
  assert.deepEqual(count(await claim({ limit: 100, perSubscription: 100, skipSubscriptions: [a.id, c.id] })), { wh_b: 9 });
  assert.deepEqual(await claim({ limit: 0, perSubscription: 4, skipSubscriptions: [] }), []);
  assert.deepEqual(await claim({ limit: 5, perSubscription: 0, skipSubscriptions: [] }), []);
});

test('not yet due deliveries are not claimed; nextDueAt tells when the next one is (a live lease counts as its end)', async (t) => {
  const { store } = await freshStore(t);
  assert.equal(await store.webhooks.nextDueAt(), null);
  await addSubscription(store, 'http://127.0.0.1:1/a');
  await plants(store, 1, 1);
  const due = await store.webhooks.nextDueAt();
  assert.ok(due && due.getTime() <= Date.now());
  const [c] = await store.webhooks.claimDueDeliveries({ now: at(0), leaseUntil: at(30_000), limit: 1, perSubscription: 1, skipSubscriptions: [] });
  const leaseEnd = (await store.webhooks.nextDueAt())!.getTime();
  assert.ok(Math.abs(leaseEnd - at(30_000).getTime()) < 1_000);
  const next = at(5_000);
  await store.webhooks.recordAttempt(c!.deliveryId, { at: new Date(), statusCode: 500, error: 'HTTP 500', durationMs: 3 }, { status: 'pending', nextAttemptAt: next });
  assert.equal((await store.webhooks.nextDueAt())!.getTime(), next.getTime());
  assert.deepEqual(await store.webhooks.claimDueDeliveries({ now: at(4_000), leaseUntil: at(60_000), limit: 5, perSubscription: 5, skipSubscriptions: [] }), []);
  const later = await store.webhooks.claimDueDeliveries({ now: at(5_001), leaseUntil: at(60_000), limit: 5, perSubscription: 5, skipSubscriptions: [] });
  assert.equal(later.length, 1);
  assert.equal(later[0]!.attemptCount, 1);
});
