// The webhook half of the Store port's contract, on the store under test: subscriptions (insert under a rule,
// list, get), the backlog of pending deliveries, the fan-out of a sequencing pass, and what disabling (410),
// deleting and enabling a subscription do to its deliveries. The other parts: delivery-store-claims.test.ts,
// delivery-store-attempts.test.ts, delivery-store-retries.test.ts; the plant half is
// test/storage/store-contract-*.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { addSubscription } from '../helpers/webhooks.js';
import { sequenced } from '../helpers/events.js';
import { at, freshStore, plants } from './delivery-store-support.js';

test('subscriptions: inserted ones are listed in creation order and read back as stored; the backlog counts pending deliveries', async (t) => {
  const { store } = await freshStore(t);
  assert.deepEqual(await store.webhooks.listSubscriptions(), []);
  assert.equal(await store.webhooks.countPendingDeliveries(), 0);
  const second = { id: 'wh_2', url: 'http://127.0.0.1:1/b', description: 'the second', events: ['newPlant', 'plantDeleted'], format: 'envelope' as const, secret: 'whsec_' + 'B'.repeat(32), createdAt: at(-1_000), disabledAt: null, disabledReason: null };
  const first = { ...second, id: 'wh_1', url: 'http://127.0.0.1:1/a', description: null, format: 'plain' as const, secret: 'whsec_' + 'A'.repeat(32), createdAt: at(-2_000) };
  await store.webhooks.insertSubscription(second, () => undefined);
  await store.webhooks.insertSubscription(first, () => undefined);
  assert.deepEqual(await store.webhooks.listSubscriptions(), [first, second]);
  assert.deepEqual(await store.webhooks.getSubscription('wh_2'), second);
  assert.equal(await store.webhooks.getSubscription('wh_none'), undefined);
  // The rule sees every stored subscription, under the write lock; what it refuses is not inserted.
  let seen: string[] = [];
  const refused = await store.webhooks.insertSubscription({ ...second, id: 'wh_3' }, (existing) => {
    seen = existing.map((e) => e.id);
    return { kind: 'duplicate', of: 'wh_2' };
  });
  assert.deepEqual(refused, { kind: 'duplicate', of: 'wh_2' });
  assert.deepEqual(seen, ['wh_1', 'wh_2']);
  assert.equal(await store.webhooks.getSubscription('wh_3'), undefined);
  await plants(store, 1, 3);
  assert.equal(await store.webhooks.countPendingDeliveries(), 6);
  const [c] = await store.webhooks.claimDueDeliveries({ now: at(0), leaseUntil: at(60_000), limit: 1, perSubscription: 1, skipSubscriptions: [] });
  // A leased delivery is still pending; a settled one is not.
  assert.equal(await store.webhooks.countPendingDeliveries(), 6);
  await store.webhooks.recordAttempt(c!.deliveryId, { at: new Date(), statusCode: 204, error: null, durationMs: 2 }, { status: 'succeeded' });
  assert.equal(await store.webhooks.countPendingDeliveries(), 5);
  assert.equal(await store.webhooks.deleteSubscription('wh_1'), true);
  assert.equal(await store.webhooks.countPendingDeliveries(), c!.subscriptionId === 'wh_1' ? 3 : 2);
});

test('a sequencing pass fans out one pending delivery per active subscription; none without subscriptions, none for replays', async (t) => {
  const { store } = await freshStore(t);
  await plants(store, 1, 2); // no subscription yet: no delivery
  const a = await addSubscription(store, 'http://127.0.0.1:1/a', 'wh_a');
  const b = await addSubscription(store, 'http://127.0.0.1:1/b', 'wh_b');
  await plants(store, 10, 1);
  await store.createPlant({ id: 10n, name: 'p10' }); // replay
  await sequenced(store);
  const eventIds = new Set<string>();
  for (const sub of [a, b]) {
    const list = await store.webhooks.listDeliveries(sub.id, 100);
    assert.equal(list.length, 1);
    assert.match(list[0]!.eventId, /^msg_/);
    eventIds.add(list[0]!.eventId);
    assert.equal(list[0]!.status, 'pending');
    assert.deepEqual(list[0]!.attempts, []);
  }
  assert.equal(eventIds.size, 1, 'one event, delivered to both subscriptions');
});

test('disable-subscription disables it (time, reason), fails this delivery and cancels the others; no new ones are made', async (t) => {
  const { store } = await freshStore(t);
  const gone = await addSubscription(store, 'http://127.0.0.1:1/gone', 'wh_gone');
  const kept = await addSubscription(store, 'http://127.0.0.1:1/kept', 'wh_kept');
  await plants(store, 1, 3);
  const [c] = await store.webhooks.claimDueDeliveries({ now: at(0), leaseUntil: at(60_000), limit: 1, perSubscription: 1, skipSubscriptions: [kept.id] });
  const when = new Date('2031-02-03T04:05:06Z');
  await store.webhooks.recordAttempt(c!.deliveryId, { at: when, statusCode: 410, error: 'HTTP 410', durationMs: 2 }, { status: 'disable-subscription', reason: 'the receiver answered 410 Gone' });
  const sub = (await store.webhooks.getSubscription(gone.id))!;
  assert.equal(sub.disabledAt?.getTime(), when.getTime());
  assert.equal(sub.disabledReason, 'the receiver answered 410 Gone');
  const list = await store.webhooks.listDeliveries(gone.id, 10);
  assert.deepEqual(list.map((d) => d.status).sort(), ['cancelled', 'cancelled', 'failed']);
  assert.equal(list.find((d) => d.status === 'failed')!.id, c!.deliveryId);
  // The disabled subscription gets nothing more; the other one is untouched.
  await plants(store, 100, 1);
  assert.equal((await store.webhooks.listDeliveries(gone.id, 10)).length, 3);
  assert.equal((await store.webhooks.listDeliveries(kept.id, 10)).filter((d) => d.status === 'pending').length, 4);
  const claimable = await store.webhooks.claimDueDeliveries({ now: at(0), leaseUntil: at(60_000), limit: 100, perSubscription: 100, skipSubscriptions: [] });
  assert.ok(claimable.every((x) => x.subscriptionId === kept.id));
  // A failed delivery of a disabled subscription cannot be retried.
  assert.equal(await store.webhooks.retryDelivery(gone.id, c!.deliveryId, new Date()), false);
});

test('deleteSubscription cancels pending deliveries and keeps the history; an in-flight attempt still records', async (t) => {
  const { store } = await freshStore(t);
  const sub = await addSubscription(store, 'http://127.0.0.1:1/a');
  await plants(store, 1, 2);
  const [c] = await store.webhooks.claimDueDeliveries({ now: at(0), leaseUntil: at(60_000), limit: 1, perSubscription: 1, skipSubscriptions: [] });
  assert.equal(await store.webhooks.deleteSubscription(sub.id), true);
  assert.equal(await store.webhooks.deleteSubscription(sub.id), false);
  assert.equal(await store.webhooks.getSubscription(sub.id), undefined);
  assert.deepEqual((await store.webhooks.listSubscriptions()).map((s) => s.id), []);
  let list = await store.webhooks.listDeliveries(sub.id, 10);
  assert.deepEqual(list.map((d) => d.status), ['cancelled', 'cancelled']);
  // The attempt that was in flight during the delete lands in the history; a cancelled delivery stays so
  // unless that attempt succeeded.
  await store.webhooks.recordAttempt(c!.deliveryId, { at: new Date(), statusCode: 500, error: 'HTTP 500', durationMs: 1 }, { status: 'pending', nextAttemptAt: at(5_000) });
  list = await store.webhooks.listDeliveries(sub.id, 10);
  const d = list.find((x) => x.id === c!.deliveryId)!;
  assert.equal(d.status, 'cancelled');
  assert.equal(d.nextAttemptAt, null);
  assert.equal(d.attempts.length, 1);
  assert.equal(await store.webhooks.nextDueAt(), null);
  assert.equal(await store.webhooks.retryDelivery(sub.id, c!.deliveryId, new Date()), false);
});

test('enableSubscription clears a disabled subscription, keeping its URL and secret; false when absent or active', async (t) => {
  const { store } = await freshStore(t);
  const sub = await addSubscription(store, 'http://127.0.0.1:1/a');
  assert.equal(await store.webhooks.enableSubscription(sub.id), false, 'already active');
  assert.equal(await store.webhooks.enableSubscription('wh_nope'), false);
  await plants(store, 1, 1);
  const [c] = await store.webhooks.claimDueDeliveries({ now: at(0), leaseUntil: at(60_000), limit: 1, perSubscription: 1, skipSubscriptions: [] });
  await store.webhooks.recordAttempt(c!.deliveryId, { at: new Date(), statusCode: 410, error: 'HTTP 410', durationMs: 1 }, { status: 'disable-subscription', reason: 'gone' });
  assert.equal((await store.webhooks.getSubscription(sub.id))!.disabledReason, 'gone');
  assert.equal(await store.webhooks.enableSubscription(sub.id), true);
  const enabled = (await store.webhooks.getSubscription(sub.id))!;
  assert.deepEqual([enabled.disabledAt, enabled.disabledReason, enabled.url, enabled.secret], [null, null, sub.url, sub.secret]);
  // Active again: a new plant makes a delivery to it.
  await plants(store, 2, 1);
  assert.equal((await store.webhooks.listDeliveries(sub.id, 10)).length, 2);
});
