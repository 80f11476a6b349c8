// The webhook half of the Store port's contract, on the store under test: a manual retry of one delivery
// (retryDelivery) and the requeueing of many (requeueDeliveries, which recover uses), each a new round.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { addSubscription } from '../helpers/webhooks.js';
import { sequenced } from '../helpers/events.js';
import { at, freshStore, plants } from './delivery-store-support.js';

test('retryDelivery: a failed, cancelled or succeeded delivery of an active subscription gets a new round, due now; a pending one no lease holds is only made due now', async (t) => {
  const { store } = await freshStore(t);
  const sub = await addSubscription(store, 'http://127.0.0.1:1/a');
  await plants(store, 1, 2);
  const claimed = await store.webhooks.claimDueDeliveries({ now: at(0), leaseUntil: at(60_000), limit: 2, perSubscription: 2, skipSubscriptions: [] });
  const [ok, bad] = claimed;
  await store.webhooks.recordAttempt(ok!.deliveryId, { at: new Date(), statusCode: 204, error: null, durationMs: 1 }, { status: 'succeeded' });
  // Exhaust the schedule: 8 attempts, the last one final.
  for (let i = 0; i < 8; i++) {
    await store.webhooks.recordAttempt(bad!.deliveryId, { at: new Date(), statusCode: 503, error: 'HTTP 503', durationMs: 1 }, i < 7 ? { status: 'pending', nextAttemptAt: at(-1) } : { status: 'failed' });
  }
  assert.equal(await store.webhooks.retryDelivery('wh_nope', bad!.deliveryId, new Date()), false, 'wrong subscription');
  assert.equal(await store.webhooks.retryDelivery(sub.id, 'dlv_nope', new Date()), false);
  const now = at(1_000);
  assert.equal(await store.webhooks.retryDelivery(sub.id, bad!.deliveryId, now), true);
  const d = (await store.webhooks.getDelivery(sub.id, bad!.deliveryId))!;
  assert.equal(d.status, 'pending');
  assert.equal(d.nextAttemptAt?.getTime(), now.getTime());
  assert.equal(d.attempts.length, 8, 'the history is kept');
  const [again] = await store.webhooks.claimDueDeliveries({ now, leaseUntil: at(60_000), limit: 5, perSubscription: 5, skipSubscriptions: [] });
  assert.equal(again!.deliveryId, bad!.deliveryId);
  assert.equal(again!.attemptCount, 0, 'a manual retry starts a new round of the schedule');
  // Leased (being sent): not touched.
  assert.equal(await store.webhooks.retryDelivery(sub.id, bad!.deliveryId, at(2_000)), false, 'held by a live lease');
  await store.webhooks.recordAttempt(again!.deliveryId, { at: new Date(), statusCode: 503, error: 'HTTP 503', durationMs: 1 }, { status: 'pending', nextAttemptAt: at(300_000) });
  // Waiting for its next try: due now, the round going on (the attempt count is kept).
  const later = at(3_000);
  assert.equal(await store.webhooks.retryDelivery(sub.id, bad!.deliveryId, later), true);
  assert.equal((await store.webhooks.getDelivery(sub.id, bad!.deliveryId))!.nextAttemptAt?.getTime(), later.getTime());
  const [third] = await store.webhooks.claimDueDeliveries({ now: later, leaseUntil: at(60_000), limit: 5, perSubscription: 5, skipSubscriptions: [] });
  assert.equal(third!.attemptCount, 1, 'a pending delivery sent now keeps its round');
  await store.webhooks.recordAttempt(third!.deliveryId, { at: new Date(), statusCode: 200, error: null, durationMs: 1 }, { status: 'succeeded' });
  assert.equal((await store.webhooks.getDelivery(sub.id, bad!.deliveryId))!.attempts.length, 10);

  // A succeeded delivery is sent again: a new round, due now, its earlier attempt kept.
  const resendAt = at(4_000);
  assert.equal(await store.webhooks.retryDelivery(sub.id, ok!.deliveryId, resendAt), true, 'a succeeded delivery is sent again');
  const resent = (await store.webhooks.getDelivery(sub.id, ok!.deliveryId))!;
  assert.equal(resent.status, 'pending');
  assert.deepEqual(resent.nextAttemptAt, resendAt);
  assert.equal(resent.attempts.length, 1);
  const [fourth] = await store.webhooks.claimDueDeliveries({ now: resendAt, leaseUntil: at(60_000), limit: 5, perSubscription: 5, skipSubscriptions: [] });
  assert.deepEqual([fourth!.deliveryId, fourth!.attemptCount], [ok!.deliveryId, 0]);
});

test('requeueDeliveries: the chosen states of one active subscription made since a time, oldest first, at most limit, each a new round due then; more says what is left', async (t) => {
  const { store } = await freshStore(t);
  const sub = await addSubscription(store, 'http://127.0.0.1:1/a', 'wh_a');
  const other = await addSubscription(store, 'http://127.0.0.1:1/b', 'wh_b');
  // Four passes a second apart: deliveries made at t0, t0+1s, t0+2s, t0+3s to each subscription.
  const t0 = Date.now() - 60_000;
  for (let i = 0; i < 4; i++) {
    await store.createPlant({ id: BigInt(i + 1), name: `p${i + 1}` });
    await sequenced(store, { now: () => t0 + i * 1_000 });
  }
  const claimed = await store.webhooks.claimDueDeliveries({ now: at(0), leaseUntil: at(60_000), limit: 100, perSubscription: 100, skipSubscriptions: [] });
  assert.equal(claimed.length, 8);
  // Of wh_a: the first succeeded, the others failed for good; all of wh_b failed.
  const ofA = (await store.webhooks.listDeliveries(sub.id, 10)).reverse();
  for (const c of claimed) {
    const outcome = c.deliveryId === ofA[0]!.id ? ({ status: 'succeeded' } as const) : ({ status: 'failed' } as const);
    await store.webhooks.recordAttempt(c.deliveryId, { at: new Date(), statusCode: 500, error: 'HTTP 500', durationMs: 1 }, outcome);
  }
  const select = { subscriptionId: sub.id, statuses: ['failed', 'cancelled'] as const, createdSince: new Date(t0), limit: 1, dueAt: at(1_000) };
  // Only failed and cancelled ones, oldest first: the second delivery (the first succeeded); the rest are left.
  assert.deepEqual(await store.webhooks.requeueDeliveries(select), { queued: 1, more: true });
  let state = (await store.webhooks.listDeliveries(sub.id, 10)).reverse();
  assert.deepEqual(state.map((d) => d.status), ['succeeded', 'pending', 'failed', 'failed']);
  assert.equal(state[1]!.nextAttemptAt?.getTime(), select.dueAt.getTime());
  assert.equal(state[1]!.attempts.length, 1, 'the history is kept');
  // since is inclusive: from the fourth delivery's time, only it.
  assert.deepEqual(await store.webhooks.requeueDeliveries({ ...select, createdSince: new Date(t0 + 3_000), limit: 10 }), { queued: 1, more: false });
  assert.deepEqual(await store.webhooks.requeueDeliveries({ ...select, createdSince: new Date(t0 + 3_001), limit: 10 }), { queued: 0, more: false });
  // Only the states asked for.
  assert.deepEqual(await store.webhooks.requeueDeliveries({ ...select, statuses: ['cancelled'], limit: 10 }), { queued: 0, more: false });
  assert.deepEqual(await store.webhooks.requeueDeliveries({ ...select, limit: 10 }), { queued: 1, more: false });
  state = (await store.webhooks.listDeliveries(sub.id, 10)).reverse();
  assert.deepEqual(state.map((d) => d.status), ['succeeded', 'pending', 'pending', 'pending']);
  // A new round: claimed with an attempt count of 0.
  const again = await store.webhooks.claimDueDeliveries({ now: at(1_000), leaseUntil: at(60_000), limit: 100, perSubscription: 100, skipSubscriptions: [] });
  assert.deepEqual(again.map((c) => [c.subscriptionId, c.attemptCount]), [[sub.id, 0], [sub.id, 0], [sub.id, 0]]);
  // The other subscription's deliveries were not touched.
  assert.deepEqual((await store.webhooks.listDeliveries(other.id, 10)).map((d) => [d.status, d.attempts.length]), Array(4).fill(['failed', 1]));
  // Nothing is taken from a disabled subscription; more says what waits there.
  const [c] = again;
  await store.webhooks.recordAttempt(c!.deliveryId, { at: new Date(), statusCode: 410, error: 'HTTP 410', durationMs: 1 }, { status: 'disable-subscription', reason: 'gone' });
  assert.deepEqual(await store.webhooks.requeueDeliveries({ ...select, limit: 10 }), { queued: 0, more: true });
  assert.deepEqual(await store.webhooks.requeueDeliveries({ ...select, subscriptionId: 'wh_nope' }), { queued: 0, more: false });
  // Enabled again, the failed one and the two cancelled by the 410 come back.
  await store.webhooks.enableSubscription(sub.id);
  assert.deepEqual(await store.webhooks.requeueDeliveries({ ...select, limit: 10 }), { queued: 3, more: false });
});
