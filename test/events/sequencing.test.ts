// The sequencing pass on the store under test: positions for every committed event at once; deliveries made
// per subscription from its own cursor, at most the pass's budget, and never more than a subscription may hold
// pending: a full one is left out of the passes until one of its deliveries settles.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../../src/storage/open-store.js';
import { MAX_PENDING_PER_SUBSCRIPTION } from '../../src/events/event-log.js';
import type { Store } from '../../src/storage/store.js';
import { freshDatabaseUrl, TEST_STORE } from '../helpers/app.js';
import { addSubscription } from '../helpers/webhooks.js';

async function passes(store: Store, budget: number): Promise<{ events: number; deliveries: number; more: boolean }[]> {
  const all = [];
  for (let i = 0; i < 1_000; i++) {
    const pass = await store.events.sequence(budget, new Date());
    all.push(pass);
    if (!pass.more) return all;
  }
  throw new Error('the passes did not end');
}

test('a pass makes at most its budget of deliveries, spread over subscriptions; every subscription gets each event once', async (t) => {
  const { store } = await openStore(await freshDatabaseUrl(t));
  t.after(() => store.close());
  const subscriptions = 300;
  for (let i = 0; i < subscriptions; i++) await addSubscription(store, `http://127.0.0.1:9/h${i}`, `wh_${String(i).padStart(3, '0')}`);
  await store.createPlant({ id: 1n, name: 'fern' });
  await store.createPlant({ id: 2n, name: 'moss' });

  const made = await passes(store, 128);
  // Both events are in the feed after the first pass; their 600 deliveries take at most 128 a pass.
  assert.equal(made[0]!.events, 2);
  assert.ok(made.every((p) => p.deliveries <= 128), JSON.stringify(made));
  assert.equal(made.reduce((n, p) => n + p.deliveries, 0), 2 * subscriptions);
  assert.ok(made.length >= 5, `${made.length} passes`);
  const events = await store.events.readAfter(null, 10);
  assert.equal(events.length, 2);
  for (const sub of await store.webhooks.listSubscriptions()) {
    const deliveries = await store.webhooks.listDeliveries(sub.id, 10);
    assert.deepEqual(deliveries.map((d) => d.eventId).sort(), events.map((e) => e.id).sort(), sub.id);
  }
  assert.deepEqual(await store.events.sequence(128, new Date()), { events: 0, deliveries: 0, more: false });
});

test('a subscription holds at most MAX_PENDING_PER_SUBSCRIPTION pending deliveries; the rest wait in the log until one settles', async (t) => {
  const { store } = await openStore(await freshDatabaseUrl(t));
  t.after(() => store.close());
  const full = await addSubscription(store, 'http://127.0.0.1:9/full', 'wh_full');
  const count = MAX_PENDING_PER_SUBSCRIPTION + 6;
  for (let i = 1; i <= count; i++) await store.createPlant({ id: BigInt(i), name: `p${i}` });
  // SQLite places an event in its commit (the subscription is then behind by all of them); PostgreSQL, with
  // concurrent writers, in the pass after it.
  const placedAtCommit = TEST_STORE === 'sqlite';
  assert.deepEqual(await store.events.backlog(), placedAtCommit ? { unplaced: 0, behind: count } : { unplaced: count, behind: 0 });
  await passes(store, 100_000);
  assert.equal((await store.events.readAfter(null, 1_000)).length, count, 'the feed has every event');
  assert.equal(await store.webhooks.countPendingDeliveries(), MAX_PENDING_PER_SUBSCRIPTION);
  assert.deepEqual(await store.events.backlog(), { unplaced: 0, behind: count - MAX_PENDING_PER_SUBSCRIPTION });
  // Full and left out: more writes make no delivery and the passes find nothing to do.
  await store.createPlant({ id: 1_000n, name: 'late' });
  const after = await passes(store, 100_000);
  assert.deepEqual(after.map((p) => p.deliveries), [0]);
  assert.equal(await store.webhooks.countPendingDeliveries(), MAX_PENDING_PER_SUBSCRIPTION);
  assert.deepEqual(await store.events.backlog(), { unplaced: 0, behind: count + 1 - MAX_PENDING_PER_SUBSCRIPTION });

  // One settles: the next pass makes the next delivery, of the oldest event not yet made.
  const now = new Date();
  const [claimed] = await store.webhooks.claimDueDeliveries({ now, leaseUntil: new Date(now.getTime() + 60_000), limit: 1, perSubscription: 1, skipSubscriptions: [] });
  await store.webhooks.recordAttempt(claimed!.deliveryId, { at: now, statusCode: 204, error: null, durationMs: 1 }, { status: 'succeeded' });
  const resumed = await passes(store, 100_000);
  assert.equal(resumed.reduce((n, p) => n + p.deliveries, 0), 1);
  const deliveries = await store.webhooks.listDeliveries(full.id, 1_000);
  assert.equal(deliveries.length, MAX_PENDING_PER_SUBSCRIPTION + 1);
  const events = await store.events.readAfter(null, 1_000);
  assert.deepEqual(new Set(deliveries.map((d) => d.eventId)), new Set(events.slice(0, MAX_PENDING_PER_SUBSCRIPTION + 1).map((e) => e.id)));

  // A subscription made now receives only what is placed after it.
  const fresh = await addSubscription(store, 'http://127.0.0.1:9/fresh', 'wh_fresh');
  await store.createPlant({ id: 2_000n, name: 'new' });
  await passes(store, 100_000);
  assert.deepEqual((await store.webhooks.listDeliveries(fresh.id, 10)).map((d) => d.eventId), [(await store.events.readAfter(null, 1_000)).at(-1)!.id]);
});
