// A commit's wake on the store under test: where commits place their events (SQLite) and no subscription takes
// deliveries, readers of the feed hear of the events without a pass (a round trip to the writer and a write
// transaction); a ready subscription, or an event still without a position, gets its pass as before.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { openStore } from '../../src/storage/open-store.js';
import { createSequencer, type Sequencer } from '../../src/events/sequencer.js';
import { createFeedNotifier, type FeedNotifier } from '../../src/events/feed-notifier.js';
import type { Store } from '../../src/storage/store.js';
import { freshDatabaseUrl, TEST_STORE } from '../helpers/app.js';
import { addSubscription } from '../helpers/webhooks.js';
import { EVENT_TYPES } from '../../src/events/event.js';
import { generateWebhookSecret } from '../../src/webhooks/signing.js';

interface Watched {
  store: Store;
  sequencer: Sequencer;
  /** Where feed readers wait: told by the sequencer when it placed events. */
  feed: FeedNotifier;
  /** Passes the sequencer asked the store for. */
  passes: () => number;
  /** Times it said events were placed. */
  placed: () => number;
  url: string;
}

async function watchedSequencer(t: TestContext): Promise<Watched> {
  const url = await freshDatabaseUrl(t);
  const { store } = await openStore(url);
  let passes = 0;
  let placed = 0;
  // The store itself, with its passes counted.
  const sequence = store.events.sequence.bind(store.events);
  store.events.sequence = (max, now) => {
    passes++;
    return sequence(max, now);
  };
  const feed = createFeedNotifier();
  const sequencer = createSequencer({
    store: store.events,
    retentionMs: 86_400_000,
    onPlaced: () => {
      placed++;
      feed.placed();
    },
  });
  t.after(async () => {
    await sequencer.stop();
    await store.close();
  });
  return { store, sequencer, feed, passes: () => passes, placed: () => placed, url };
}

/** Wakes the sequencer as a commit does and waits until feed readers hear of events. */
async function wakeAndWait({ sequencer, feed }: Watched): Promise<void> {
  const heard = feed.next(5_000);
  sequencer.wake();
  assert.equal(await heard, 'events');
}

test('with no subscription, a commit wakes the feed readers; on SQLite without a pass, on PostgreSQL with the pass that places the event', async (t) => {
  const w = await watchedSequencer(t);
  await w.store.createPlant({ id: 1n, name: 'fern' });
  await wakeAndWait(w);
  assert.equal(w.passes(), TEST_STORE === 'sqlite' ? 0 : 1);
  assert.equal(w.placed(), 1);
  const feed = await w.store.events.readAfter(null, 10);
  assert.deepEqual(feed.map((e) => [e.type, e.position]), [['newPlant', 1n]]);

  // A disabled subscription takes nothing either.
  await w.store.webhooks.insertSubscription(
    { id: 'wh_off', url: 'http://127.0.0.1:9/off', description: null, events: [...EVENT_TYPES], format: 'plain', secret: generateWebhookSecret(), createdAt: new Date(), disabledAt: new Date(), disabledReason: 'failing' },
    () => undefined,
  );
  await w.store.createPlant({ id: 2n, name: 'moss' });
  await wakeAndWait(w);
  assert.equal(w.passes(), TEST_STORE === 'sqlite' ? 0 : 2);
  assert.equal(await w.store.webhooks.countPendingDeliveries(), 0);
});

test('a ready subscription gets its pass: the commit after it was made is delivered to it', async (t) => {
  const w = await watchedSequencer(t);
  const sub = await addSubscription(w.store, 'http://127.0.0.1:9/hook');
  await w.store.createPlant({ id: 7n, name: 'ivy' });
  // Readers hear of the event after the pass that made its delivery.
  await wakeAndWait(w);
  assert.equal(w.passes(), 1);
  assert.equal(await w.store.webhooks.countPendingDeliveries(), 1);
  const [delivery] = await w.store.webhooks.listDeliveries(sub.id, 10);
  const [event] = await w.store.events.readAfter(null, 10);
  assert.equal(delivery?.eventId, event?.id);
});

test('SQLite: an event committed without a position (by an older version) gets its pass, which places it', async (t) => {
  if (TEST_STORE !== 'sqlite') return t.skip('PostgreSQL places every event in a pass');
  const w = await watchedSequencer(t);
  await w.store.createPlant({ id: 1n, name: 'fern' });
  const raw = new Database(w.url.slice('sqlite:'.length));
  raw.prepare(`INSERT INTO webhook_events (id, type, payload, created_at, position) VALUES ('msg_old', 'newPlant', '{}', 0, NULL)`).run();
  raw.close();
  await wakeAndWait(w);
  assert.equal(w.passes(), 1);
  const feed = await w.store.events.readAfter(null, 10);
  assert.deepEqual(feed.map((e) => [e.id, e.position]).at(-1), ['msg_old', 2n]);
});
