// The webhook half of the Store port's contract (test/storage/store-contract.test.ts is the rest), on the store
// under test: subscriptions, the outbox backlog, atomic leases, per-subscription caps and skips, lease expiry,
// attempts and outcomes in one transaction, 410 disabling, delete and manual retry rules, requeueing (recover),
// and nextDueAt.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { openStore } from '../../src/storage/open-store.js';
import type { Store } from '../../src/storage/store.js';
import { tempDir, freshDatabaseUrl } from '../helpers/app.js';
import { addSubscription } from '../helpers/webhooks.js';
import { sequenced } from '../helpers/events.js';

async function freshStore(t: TestContext): Promise<{ store: Store; databaseUrl: string }> {
  const databaseUrl = (await freshDatabaseUrl(t));
  const { store } = await openStore(databaseUrl);
  t.after(() => store.close());
  return { store, databaseUrl };
}

/**
 * Creates plants from..from+count-1 at once (one group commit); each new one writes its newPlant event, and the
 * sequencing pass that follows makes its deliveries.
 */
async function plants(store: Store, from: number, count: number): Promise<void> {
  await Promise.all(Array.from({ length: count }, (_, i) => store.createPlant({ id: BigInt(from + i), name: `p${from + i}` })));
  await sequenced(store);
}

const at = (ms: number) => new Date(Date.now() + ms);

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

test('recordAttempt writes the attempt and the outcome; attempts concurrently recorded share commits and all land', async (t) => {
  const { store } = await freshStore(t);
  const sub = await addSubscription(store, 'http://127.0.0.1:1/a');
  await plants(store, 1, 50);
  const claimed = await store.webhooks.claimDueDeliveries({ now: at(0), leaseUntil: at(60_000), limit: 100, perSubscription: 100, skipSubscriptions: [] });
  assert.equal(claimed.length, 50);
  const when = new Date();
  await Promise.all(
    claimed.map((c, i) =>
      store.webhooks.recordAttempt(
        c.deliveryId,
        { at: when, statusCode: i % 2 ? 200 : null, error: i % 2 ? null : 'timeout: no answer within 15000 ms', durationMs: i },
        i % 2 ? { status: 'succeeded' } : { status: 'failed' },
      ),
    ),
  );
  const list = await store.webhooks.listDeliveries(sub.id, 1000);
  assert.equal(list.length, 50);
  for (const d of list) {
    assert.equal(d.attempts.length, 1);
    assert.equal(d.nextAttemptAt, null);
    const a = d.attempts[0]!;
    assert.equal(a.at.getTime(), when.getTime());
    if (d.status === 'succeeded') assert.deepEqual([a.statusCode, a.error], [200, null]);
    else assert.deepEqual([d.status, a.statusCode, a.error], ['failed', null, 'timeout: no answer within 15000 ms']);
  }
  assert.equal(list.filter((d) => d.status === 'succeeded').length, 25);
  // Newest first, limit honoured, getDelivery agrees.
  const two = await store.webhooks.listDeliveries(sub.id, 2);
  assert.equal(two.length, 2);
  assert.deepEqual(await store.webhooks.getDelivery(sub.id, two[0]!.id), two[0]);
  assert.equal(await store.webhooks.getDelivery('wh_other', two[0]!.id), undefined);
  // Nothing left to claim.
  assert.deepEqual(await store.webhooks.claimDueDeliveries({ now: at(1e9), leaseUntil: at(2e9), limit: 100, perSubscription: 100, skipSubscriptions: [] }), []);
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

test('a delivery and its attempts are read from one snapshot while attempts commit: never pending with an attempt', async (t) => {
  const { store } = await freshStore(t);
  const sub = await addSubscription(store, 'http://127.0.0.1:1/a');
  await plants(store, 1, 40);
  const claimed = await store.webhooks.claimDueDeliveries({ now: at(0), leaseUntil: at(60_000), limit: 100, perSubscription: 100, skipSubscriptions: [] });
  assert.equal(claimed.length, 40);
  // One commit per attempt, each landing while the reader below is between reads or inside one.
  let recording = true;
  const writes = (async () => {
    for (const c of claimed) {
      await store.webhooks.recordAttempt(c.deliveryId, { at: new Date(), statusCode: 200, error: null, durationMs: 1 }, { status: 'succeeded' });
    }
    recording = false;
  })();
  let reads = 0;
  while (recording) {
    for (const d of await store.webhooks.listDeliveries(sub.id, 1000)) {
      assert.equal(d.attempts.length, d.status === 'pending' ? 0 : 1, `a ${d.status} delivery listed with ${d.attempts.length} attempts`);
    }
    reads++;
    // Reads answer without a macrotask on SQLite; let the writer's replies in.
    await new Promise((resolve) => setImmediate(resolve));
  }
  await writes;
  assert.ok(reads > 0);
  const after = await store.webhooks.listDeliveries(sub.id, 1000);
  assert.deepEqual(after.map((d) => [d.status, d.attempts.length]), after.map(() => ['succeeded', 1]));
});
