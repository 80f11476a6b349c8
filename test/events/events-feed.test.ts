// GET /events: every plant change in commit order, the same ids and bodies as the webhooks, pages with Link,
// long polling, retention with 410, and the bounds (waiters, shutdown); events-waiting.test.ts tests the caps.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startApp, type TestApp } from '../helpers/app.js';
import { testClock } from '../helpers/clock.js';
import { eventsWaiting } from '../helpers/events.js';
import { addSubscription } from '../helpers/webhooks.js';
import { startReceiver } from '../helpers/receiver.js';

interface FeedEvent {
  id: string;
  type: string;
  createdAt: string;
  data: { id: number; name?: string; tag?: string; version: number };
}

async function feed(s: TestApp, query = ''): Promise<{ status: number; link: string | null; events: FeedEvent[]; text: string }> {
  const res = await fetch(`${s.url}/events${query}`, { headers: { authorization: `Bearer ${s.token.read}` } });
  const text = await res.text();
  return { status: res.status, link: res.headers.get('link'), events: res.status === 200 ? (JSON.parse(text) as FeedEvent[]) : [], text };
}

function write(s: TestApp, method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${s.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${s.token.write}`,
      ...(body !== undefined && { 'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json' }),
    },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
}

test('every change is in the feed in commit order, with its version; pages follow Link; after continues from a cursor', async (t) => {
  const s = await startApp(t);
  assert.deepEqual((await feed(s)).events, []);
  assert.equal((await s.postPlant({ id: 1, name: 'fern' })).status, 200);
  assert.equal((await s.postPlant({ id: 2, name: 'moss', tag: 'green' })).status, 200);
  assert.equal((await write(s, 'PUT', '/plants/1', { name: 'tree fern' })).status, 200);
  assert.equal((await write(s, 'PATCH', '/plants/2', { tag: null })).status, 200);
  assert.equal((await write(s, 'DELETE', '/plants/1')).status, 204);
  await s.sequencer.runOnce();

  const all = await feed(s);
  assert.equal(all.status, 200);
  assert.equal(all.link, null);
  assert.deepEqual(all.events.map((e) => [e.type, e.data.id, e.data.name]), [
    ['newPlant', 1, 'fern'],
    ['newPlant', 2, 'moss'],
    ['plantUpdated', 1, 'tree fern'],
    ['plantUpdated', 2, 'moss'],
    ['plantDeleted', 1, undefined],
  ]);
  assert.equal(all.events[1]!.data.tag, 'green');
  assert.ok(!('tag' in all.events[3]!.data));
  // Each write took a new, higher version, in commit order, the delete too.
  const versions = all.events.map((e) => e.data.version);
  assert.deepEqual([...versions].sort((a, b) => a - b), versions, 'versions grow in commit order');
  assert.ok(all.events[4]!.data.version > all.events[2]!.data.version);
  for (const e of all.events) {
    assert.match(e.id, /^msg_[A-Za-z0-9_-]{22}$/);
    assert.ok(Math.abs(Date.parse(e.createdAt) - Date.now()) < 60_000, e.createdAt);
  }

  // Two at a time: Link names the next page, and following it gives the rest, once each.
  const seen: FeedEvent[] = [];
  let next: string | null = '/events?limit=2';
  for (let pages = 0; next !== null; pages++) {
    assert.ok(pages < 5);
    const page = await feed(s, next.slice('/events'.length));
    seen.push(...page.events);
    next = page.link === null ? null : /^<([^>]+)>; rel="next"$/.exec(page.link)![1]!;
  }
  assert.deepEqual(seen, all.events);
  const after = await feed(s, `?after=${all.events[2]!.id}`);
  assert.deepEqual(after.events, all.events.slice(3));
  assert.deepEqual((await feed(s, `?after=${all.events[4]!.id}`)).events, []);
  // Replays and refused writes are not events.
  assert.equal((await s.postPlant({ id: 2, name: 'moss' })).status, 200);
  assert.equal((await write(s, 'DELETE', '/plants/1')).status, 404);
  await s.sequencer.runOnce();
  assert.equal((await feed(s)).events.length, 5);
});

test('the feed carries the same event ids and exact bodies as the webhooks, ids beyond 2^53 digit for digit', async (t) => {
  const s = await startApp(t, { config: { webhookAllowedHosts: ['127.0.0.1'] }, dispatcher: {}, backgroundDispatcher: false });
  const rx = await startReceiver(t, () => sub.secret);
  const sub = await addSubscription(s.store, rx.url);
  assert.equal((await s.postPlant('{"id": 9007199254740993, "name": "big"}')).status, 200);
  await s.dispatcher.runOnce();
  await rx.until((r) => r.byId.size === 1);
  const [webhookId, delivered] = [...rx.byId.entries()][0]!;
  const page = await feed(s);
  assert.equal(page.events.length, 1);
  assert.equal(page.events[0]!.id, webhookId);
  assert.ok(page.text.includes(`"data":${delivered!.body}`), page.text);
  assert.ok(page.text.includes('"id":9007199254740993'), page.text);
});

test('wait: a reader waiting after the last event is answered when the next commits; with none it gets [] when the time is up', async (t) => {
  const s = await startApp(t);
  assert.equal((await s.postPlant({ id: 1, name: 'fern' })).status, 200);
  await s.sequencer.runOnce();
  const [first] = (await feed(s)).events;
  let answered = 0;
  const readers = await eventsWaiting(s);
  const waiting = feed(s, `?after=${first!.id}&wait=30`).then((r) => ((answered = Date.now()), r));
  // The write comes once the reader waits.
  await readers.is(1);
  const posted = s.postPlant({ id: 2, name: 'moss' }).then(() => Date.now());
  const [woke, acknowledged] = await Promise.all([waiting, posted]);
  const took = answered - acknowledged;
  t.diagnostic(`the waiting reader was answered ${took} ms after the write was acknowledged`);
  assert.equal(woke.status, 200);
  assert.deepEqual(woke.events.map((e) => e.data.id), [2]);
  assert.ok(took < 1_000, `${took} ms`);

  const t1 = Date.now();
  const empty = await feed(s, `?after=${woke.events[0]!.id}&wait=1`);
  const waited = Date.now() - t1;
  assert.equal(empty.status, 200);
  assert.deepEqual(empty.events, []);
  assert.ok(waited >= 900 && waited < 10_000, `${waited} ms`);
});

test('wait is bounded: past EVENTS_MAX_WAITING a reader is refused at once (503), and a shutdown answers waiting readers at once', async (t) => {
  const none = await startApp(t, { config: { eventsMaxWaiting: 0 } });
  const t0 = Date.now();
  const refused = await feed(none, '?wait=30');
  assert.equal(refused.status, 503);
  assert.match(refused.text, /^\{"error":503,"message":"This server process has as many GET \/events requests waiting as it may \(EVENTS_MAX_WAITING\)/);
  assert.ok(Date.now() - t0 < 10_000);

  const s = await startApp(t);
  const t1 = Date.now();
  const readers = await eventsWaiting(s);
  const waiting = feed(s, '?wait=30');
  await readers.is(1);
  s.app.drain();
  const answered = await waiting;
  assert.equal(answered.status, 200);
  assert.deepEqual(answered.events, []);
  assert.ok(Date.now() - t1 < 10_000, `${Date.now() - t1} ms`);
});

test('after: malformed or unknown is 400; once retention removed events, an old cursor is 410 and the feed restarts at the oldest kept', async (t) => {
  const clock = testClock();
  // A short retention, which the 410 must spell as it is (not "0 hours").
  const s = await startApp(t, { clock, backgroundDispatcher: false, config: { eventRetentionMs: 60_000 } });
  assert.equal((await feed(s, '?after=nope')).status, 400);
  const unknown = await feed(s, `?after=msg_${'A'.repeat(22)}`);
  assert.equal(unknown.status, 400);
  assert.match(unknown.text, /"error":400,"message":"after=msg_A+ names no event/);
  for (const q of ['?limit=0', '?limit=1001', '?wait=31', '?wait=-1', '?since=1']) assert.equal((await feed(s, q)).status, 400, q);

  // Plant 2's event has a delivery still pending (the dispatcher is not running): retention keeps it.
  await addSubscription(s.store, 'http://127.0.0.1:9/hooks', 'wh_deletes', ['plantDeleted']);
  assert.equal((await s.postPlant({ id: 1, name: 'fern' })).status, 200);
  assert.equal((await s.postPlant({ id: 2, name: 'moss' })).status, 200);
  assert.equal((await write(s, 'DELETE', '/plants/2')).status, 204);
  await s.sequencer.runOnce();
  const old = (await feed(s)).events;
  assert.equal(old.length, 3);
  assert.equal(await s.sequencer.retainOnce(), 0, 'nothing is old yet');
  clock.advance(2 * 60_000);
  // Writes take the machine's time and retention the app's clock: 2 minutes on, all three are old.
  assert.equal(await s.sequencer.retainOnce(), 2);
  const gone = await feed(s, `?after=${old[0]!.id}`);
  assert.equal(gone.status, 410);
  assert.match(gone.text, /"error":410,"message":"The event msg_\S+ is no longer in the feed: events are kept for 1 minute \(EVENT_RETENTION\)\. Start again from the oldest event kept: GET \/events without after\."/);
  assert.deepEqual((await feed(s)).events.map((e) => e.type), ['plantDeleted']);
  assert.equal((await feed(s, `?after=msg_${'A'.repeat(22)}`)).status, 410);
  assert.equal((await s.postPlant({ id: 3, name: 'ivy' })).status, 200);
  await s.sequencer.runOnce();
  assert.deepEqual((await feed(s, `?after=${old[2]!.id}`)).events.map((e) => e.data.id), [3]);
});
