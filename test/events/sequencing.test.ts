// The sequencing pass on the store under test: positions for every committed event at once, and deliveries
// bounded per pass, an event with more subscribers than the bound delivered over several passes, each
// subscription once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../../src/storage/open-store.js';
import { freshDatabaseUrl } from '../helpers/app.js';
import { addSubscription } from '../webhooks/delivery-support.js';

test('a pass makes at most its budget of deliveries; an event with more subscribers is delivered over several passes, once to each', async (t) => {
  const { store } = await openStore(await freshDatabaseUrl(t));
  t.after(() => store.close());
  const subscriptions = 300;
  for (let i = 0; i < subscriptions; i++) await addSubscription(store, `http://127.0.0.1:9/h${i}`, `wh_${String(i).padStart(3, '0')}`);
  await store.createPlant({ id: 1n, name: 'fern' });
  await store.createPlant({ id: 2n, name: 'moss' });

  const passes = [];
  for (let i = 0; i < 10; i++) {
    const pass = await store.events.sequence(128, new Date());
    passes.push(pass);
    if (!pass.more) break;
  }
  // Both events are in the feed after the first pass; their 600 deliveries take 128 a pass.
  assert.equal(passes[0]!.events, 2);
  assert.equal((await store.events.readAfter(null, 10)).length, 2);
  assert.ok(passes.every((p) => p.deliveries <= 128), JSON.stringify(passes));
  assert.equal(passes.reduce((n, p) => n + p.deliveries, 0), 2 * subscriptions);
  assert.ok(passes.length >= 5, `${passes.length} passes`);
  assert.equal(passes.at(-1)!.more, false);
  const events = await store.events.readAfter(null, 10);
  for (const sub of await store.webhooks.listSubscriptions()) {
    const deliveries = await store.webhooks.listDeliveries(sub.id, 10);
    assert.deepEqual(deliveries.map((d) => d.eventId).sort(), events.map((e) => e.id).sort(), sub.id);
  }
  // Nothing is left: another pass makes nothing.
  assert.deepEqual(await store.events.sequence(128, new Date()), { events: 0, deliveries: 0, more: false });
});
