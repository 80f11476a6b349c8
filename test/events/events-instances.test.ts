// The feed with two instances on one PostgreSQL database: writes on both, one commit order for every reader,
// a reader waiting on one instance woken by a commit on the other (LISTEN/NOTIFY), and a stream likewise.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startApp, type TestApp } from '../helpers/app.js';
import { eventsWaiting, openStream } from '../helpers/events.js';

interface FeedEvent {
  id: string;
  type: string;
  data: { id: number; version: number };
}

async function feed(s: TestApp, query: string): Promise<{ events: FeedEvent[]; link: string | null }> {
  const res = await fetch(`${s.url}/events${query}`, { headers: { authorization: `Bearer ${s.token.read}` } });
  assert.equal(res.status, 200, await res.clone().text());
  return { events: (await res.json()) as FeedEvent[], link: res.headers.get('link') };
}

function send(s: TestApp, method: string, id: number, body?: unknown): Promise<Response> {
  return fetch(`${s.url}/plants${method === 'POST' ? '' : `/${id}`}`, {
    method,
    headers: { authorization: `Bearer ${s.token.write}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
}

test('writes on two instances: a reader following the feed sees every event once, each plant in version order, as any later reader does', async (t) => {
  const a = await startApp(t);
  const b = await startApp(t, { databaseUrl: a.databaseUrl });
  const plants = 150;
  let expected = 0;
  const seen: FeedEvent[] = [];
  let writing = true;
  // Follows on instance a while both instances write.
  const follower = (async () => {
    let after = '';
    const deadline = Date.now() + 60_000;
    while ((writing || seen.length < expected) && Date.now() < deadline) {
      const page = await feed(a, `?limit=37&wait=2${after && `&after=${after}`}`);
      seen.push(...page.events);
      if (page.events.length > 0) after = page.events[page.events.length - 1]!.id;
    }
  })();
  await Promise.all(
    Array.from({ length: plants }, async (_, i) => {
      const [first, second] = i % 2 === 0 ? [a, b] : [b, a];
      assert.equal((await send(first, 'POST', i, { id: i, name: `p${i}` })).status, 200);
      assert.equal((await send(second, 'PUT', i, { name: `q${i}` })).status, 200);
      expected += 2;
      if (i % 3 === 0) {
        assert.equal((await send(first, 'DELETE', i)).status, 204);
        expected += 1;
      }
    }),
  );
  writing = false;
  await follower;
  assert.equal(seen.length, expected);
  assert.equal(new Set(seen.map((e) => e.id)).size, expected, 'no event twice');
  const byPlant = new Map<number, FeedEvent[]>();
  for (const e of seen) byPlant.set(e.data.id, [...(byPlant.get(e.data.id) ?? []), e]);
  assert.equal(byPlant.size, plants);
  for (const [id, events] of byPlant) {
    assert.deepEqual(events.map((e) => e.type), id % 3 === 0 ? ['newPlant', 'plantUpdated', 'plantDeleted'] : ['newPlant', 'plantUpdated'], `plant ${id}`);
    // Each write gives a new, higher version, a delete too.
    const versions = events.map((e) => e.data.version);
    assert.ok(versions.every((v, k) => k === 0 || v > versions[k - 1]!), `plant ${id}: versions ${versions}`);
  }
  // A reader starting now, on the other instance, pages through the same events in the same order.
  const later: FeedEvent[] = [];
  let next: string | null = '?limit=100';
  while (next !== null) {
    const page = await feed(b, next);
    later.push(...page.events);
    next = page.link === null ? null : /^<\/events([^>]+)>/.exec(page.link)![1]!;
  }
  assert.deepEqual(later.map((e) => e.id), seen.map((e) => e.id));
});

test('a reader waiting on one instance is answered within 1 s of a commit on the other', async (t) => {
  const a = await startApp(t);
  const b = await startApp(t, { databaseUrl: a.databaseUrl });
  assert.equal((await send(a, 'POST', 1, { id: 1, name: 'fern' })).status, 200);
  await a.sequencer.runOnce();
  const [first] = (await feed(a, '')).events;
  // The waiting request has reached instance a and found nothing before the write on b starts.
  const waitingOnA = await eventsWaiting(a);
  const waiting = feed(a, `?after=${first!.id}&wait=20`);
  await waitingOnA.is(1);
  assert.equal((await send(b, 'POST', 2, { id: 2, name: 'moss' })).status, 200);
  const committed = Date.now();
  const woke = await waiting;
  const took = Date.now() - committed;
  t.diagnostic(`instance a answered ${took} ms after instance b acknowledged the write`);
  assert.deepEqual(woke.events.map((e) => e.data.id), [2]);
  assert.ok(took < 1_000, `${took} ms`);
});

test('a stream on one instance hears of the writes on the other, and resumes there with Last-Event-ID after a disconnect', async (t) => {
  const a = await startApp(t);
  const b = await startApp(t, { databaseUrl: a.databaseUrl });
  const stream = await openStream(a.url, a.token.read);
  for (const id of [1, 2]) assert.equal((await send(b, 'POST', id, { id, name: `p${id}` })).status, 200);
  const first = await stream.received(2);
  stream.close();
  await stream.ended;
  for (const id of [3, 4]) assert.equal((await send(a, 'POST', id, { id, name: `p${id}` })).status, 200);
  // Resumed on the other instance, where none of these was read.
  const again = await openStream(b.url, b.token.read, { 'last-event-id': first.at(-1)!.id! });
  assert.equal((await send(a, 'POST', 5, { id: 5, name: 'p5' })).status, 200);
  const rest = await again.received(3);
  assert.deepEqual([...first, ...rest].map((m) => (JSON.parse(m.data) as { id: number }).id), [1, 2, 3, 4, 5]);
  again.close();
});
