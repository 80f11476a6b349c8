// GET /events pages are bounded in bytes (EVENTS_PAGE_BYTES) as well as by limit: a page ends before the event
// that would pass the budget, with Link to the rest, always holding at least one event; following Link reads
// every event exactly once, in order.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startApp, type TestApp } from '../helpers/app.js';

// The largest event there is: 256 code points that JSON writes as six bytes each (\u0001).
const WIDEST = '\u0001'.repeat(256);

interface Page {
  bytes: number;
  ids: number[];
  eventIds: string[];
  next: string | null;
}

async function page(s: TestApp, path: string): Promise<Page> {
  const res = await fetch(`${s.url}${path}`, { headers: { authorization: `Bearer ${s.token.read}` } });
  assert.equal(res.status, 200);
  const text = await res.text();
  const events = JSON.parse(text) as { id: string; data: { id: number } }[];
  const link = res.headers.get('link');
  return {
    bytes: Buffer.byteLength(text),
    ids: events.map((e) => e.data.id),
    eventIds: events.map((e) => e.id),
    next: link === null ? null : /^<([^>]+)>; rel="next"$/.exec(link)![1]!,
  };
}

/** Every page from `path` on, following Link. */
async function follow(s: TestApp, path: string): Promise<Page[]> {
  const pages: Page[] = [];
  for (let next: string | null = path; next !== null; next = pages[pages.length - 1]!.next) pages.push(await page(s, next));
  return pages;
}

test('events past the byte budget come back over several pages by following Link, each exactly once, in order', async (t) => {
  const budget = 16_384;
  const s = await startApp(t, { config: { eventsPageBytes: budget } });
  // Large and small events mixed: 24 of about 3.2 kB each, 6 of a few bytes.
  for (let id = 1; id <= 30; id++) {
    const res = await s.postPlant(id % 5 === 0 ? { id, name: 'fern' } : { id, name: WIDEST, tag: WIDEST });
    assert.equal(res.status, 200);
  }
  await s.sequencer.runOnce();

  const pages = await follow(s, '/events?limit=100');
  assert.ok(pages.length >= 5, `${pages.length} pages`);
  for (const p of pages.slice(0, -1)) {
    assert.ok(p.ids.length < 100, 'cut short by bytes, not by limit');
    assert.ok(p.bytes <= budget, `a page of ${p.bytes} bytes`);
    assert.match(p.next!, /^\/events\?after=msg_[A-Za-z0-9_-]{22}&limit=100$/);
    assert.equal(new URLSearchParams(p.next!.split('?')[1]).get('after'), p.eventIds[p.eventIds.length - 1]);
  }
  assert.equal(pages[pages.length - 1]!.next, null);
  assert.deepEqual(pages.flatMap((p) => p.ids), Array.from({ length: 30 }, (_, i) => i + 1));

  // limit still cuts first when it comes first.
  const byLimit = await page(s, '/events?limit=2');
  assert.deepEqual(byLimit.ids, [1, 2]);
  assert.notEqual(byLimit.next, null);
});

test('an event larger than the budget is a page of its own; the feed still moves on', async (t) => {
  const s = await startApp(t, { config: { eventsPageBytes: 1_024 } });
  for (let id = 1; id <= 3; id++) assert.equal((await s.postPlant({ id, name: WIDEST })).status, 200);
  await s.sequencer.runOnce();
  const pages = await follow(s, '/events');
  assert.deepEqual(pages.map((p) => p.ids), [[1], [2], [3]]);
  assert.ok(pages[0]!.bytes > 1_024);
});

test('the store reads about a page of bytes, not limit rows: events written before the limit (1 MB each) come one a page', async (t) => {
  const budget = 16_384;
  const s = await startApp(t, { config: { eventsPageBytes: budget } });
  // Past the service's rules, as an earlier version stored them.
  for (let id = 1; id <= 4; id++) await s.store.createPlant({ id: BigInt(id), name: String(id).repeat(1_000_000) });
  for (let id = 5; id <= 8; id++) assert.equal((await s.postPlant({ id, name: WIDEST, tag: WIDEST })).status, 200);
  await s.sequencer.runOnce();
  // Two rows however large (the second says more follow), then only what the budget holds.
  assert.equal((await s.store.events.readAfter(null, 1_001, budget)).length, 2);
  const large = await s.store.events.readAfter(null, 4);
  const after = await s.store.events.readAfter(large[3]!.position, 1_001, budget);
  assert.deepEqual(after.map((e) => JSON.parse(e.payload).id), [5, 6, 7, 8]);
  const pages = await follow(s, '/events?limit=1000');
  assert.deepEqual(pages.map((p) => p.ids), [[1], [2], [3], [4], [5, 6, 7, 8]]);
});
