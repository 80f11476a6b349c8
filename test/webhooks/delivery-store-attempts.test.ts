// The webhook half of the Store port's contract, on the store under test: an attempt and its outcome recorded
// in one transaction (concurrent ones sharing commits), and a delivery read with its attempts from one snapshot.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { addSubscription } from '../helpers/webhooks.js';
import { at, freshStore, plants } from './delivery-store-support.js';

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
