// GET /events with wait: nobody can hoard the waiting places. A client that closes (FIN, even of its sending
// side only, or a reset) frees its place at once; waits are capped per token and per process, and a request over
// a cap is refused at once with 429 or 503, Retry-After and an Error body, while one with events to read gets them.
// The readers one wake releases share what they read, and each still gets the page its own query asks for.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { errorOf, startApp, type StartOptions, type TestApp } from '../helpers/app.js';
import { eventsWaiting } from '../helpers/events.js';

interface FeedEvent {
  id: string;
  data: { id: number };
}

function feed(s: TestApp, query: string, token = s.token.read): Promise<Response> {
  return fetch(`${s.url}/events${query}`, { headers: { authorization: `Bearer ${token}` } });
}

async function events(res: Response): Promise<FeedEvent[]> {
  assert.equal(res.status, 200);
  return (await res.json()) as FeedEvent[];
}

/** An app, and a wait until `n` requests wait. */
async function start(t: TestContext, config: StartOptions['config']) {
  const s = await startApp(t, { config });
  const waiting = await eventsWaiting(s);
  return { s, waitingIs: (n: number) => waiting.is(n) };
}

/** A waiting GET /events over a raw socket, then any requests pipelined behind it; collects what the server writes. */
function rawWait(s: TestApp, query: string, ...pipelined: string[]) {
  const socket = connect(s.port, '127.0.0.1');
  let data = '';
  socket.on('data', (d: Buffer) => (data += d.toString('latin1')));
  socket.on('error', () => {});
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  for (const path of [`/events${query}`, ...pipelined]) socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.token.read}\r\n\r\n`);
  return { socket, data: () => data, closed };
}

/** Asserts a refusal of a waiting request: `status`, Retry-After in whole seconds within `range`, the Error body. */
async function refused(res: Response, status: number, range: [number, number]): Promise<string> {
  assert.equal(res.status, status);
  const retryAfter = Number(res.headers.get('retry-after'));
  assert.ok(Number.isInteger(retryAfter) && retryAfter >= range[0] && retryAfter <= range[1], `Retry-After ${res.headers.get('retry-after')}`);
  return (await errorOf(res)).message;
}

test('a waiting client that closes its sending side (FIN) or resets frees its place at once', async (t) => {
  const { s, waitingIs } = await start(t, { eventsMaxWaiting: 1 });
  assert.equal((await s.postPlant({ id: 1, name: 'fern' })).status, 200);
  await s.sequencer.runOnce();
  const [first] = await events(await feed(s, ''));
  const after = `?after=${first!.id}&wait=30`;

  // FIN: the place is held, then the half-closed client is answered at once (it can still read) and the place is
  // free; the request it pipelined behind the wait is answered too, in order, before the server closes.
  const fin = rawWait(s, after, '/plants/1');
  await waitingIs(1);
  const full = await refused(await feed(s, after, s.token.all), 503, [1, 1]);
  assert.match(full, /EVENTS_MAX_WAITING/);
  const t0 = Date.now();
  fin.socket.end();
  await fin.closed;
  t.diagnostic(`the half-closed client was answered and its place freed ${Date.now() - t0} ms after its FIN`);
  assert.ok(Date.now() - t0 < 10_000);
  assert.match(fin.data(), /^HTTP\/1\.1 200 [^]*\r\n\r\n\[\]HTTP\/1\.1 200 [^]*\r\n\r\n\{"id":1,"name":"fern"\}$/);
  await waitingIs(0);
  // A FIN right behind the request (before or after the wait began) ends it as well.
  const early = rawWait(s, after);
  early.socket.end();
  await early.closed;
  assert.match(early.data(), /^HTTP\/1\.1 200 [^]*\r\n\r\n\[\]$/);

  // Reset: the place is freed as well.
  const reset = rawWait(s, after);
  await waitingIs(1);
  reset.socket.resetAndDestroy();
  await waitingIs(0);

  // The next waiting request gets the place, and the next event.
  const admitted = feed(s, after, s.token.all);
  await waitingIs(1);
  assert.equal((await s.postPlant({ id: 2, name: 'moss' })).status, 200);
  assert.deepEqual((await events(await admitted)).map((e) => e.data.id), [2]);
  await waitingIs(0);
});

test('waits are capped per token (429) and per process (503), with Retry-After; a request with events to read still gets them', async (t) => {
  const { s, waitingIs } = await start(t, { eventsMaxWaiting: 2, eventsMaxWaitingPerToken: 1 });
  assert.equal((await s.postPlant({ id: 1, name: 'fern' })).status, 200);
  await s.sequencer.runOnce();
  const [first] = await events(await feed(s, ''));
  const after = `?after=${first!.id}&wait=30`;
  const { secret: third } = await s.tokens.create({ name: 'third', scopes: ['plants:read'] });

  const holder = feed(s, after);
  await waitingIs(1);
  // The same token: 429 at once, until its wait ends at the latest (30 s from now).
  const t0 = Date.now();
  const own = await refused(await feed(s, after), 429, [25, 30]);
  assert.ok(Date.now() - t0 < 10_000);
  assert.match(own, /EVENTS_MAX_WAITING_PER_TOKEN/);
  // The cap concerns waiting only: the same token reading events that are there gets them.
  assert.deepEqual((await events(await feed(s, '?wait=30'))).map((e) => e.data.id), [1]);
  // Another token gets in; with both places of the process taken, a third token is answered 503.
  const other = feed(s, after, s.token.all);
  await waitingIs(2);
  await refused(await feed(s, after, third), 503, [1, 1]);
  // A request that does not wait is never refused.
  assert.deepEqual(await events(await feed(s, `?after=${first!.id}`, third)), []);

  assert.equal((await s.postPlant({ id: 2, name: 'moss' })).status, 200);
  for (const answer of await Promise.all([holder, other])) assert.deepEqual((await events(answer)).map((e) => e.data.id), [2]);
  await waitingIs(0);
});

test('the readers one wake releases each get the page their own query asks for: the same events, cut at their own limit', async (t) => {
  const { s, waitingIs } = await start(t, { eventsMaxWaitingPerToken: 10 });
  assert.equal((await s.postPlant({ id: 1, name: 'fern' })).status, 200);
  await s.sequencer.runOnce();
  const [first] = await events(await feed(s, ''));
  const after = `?after=${first!.id}&wait=30`;
  const readers = [feed(s, after), feed(s, `${after}&limit=1`), feed(s, after, s.token.all), feed(s, `${after}&limit=1`, s.token.all)];
  await waitingIs(4);
  // Two events placed by one pass: one wake for every reader.
  await s.store.createPlant({ id: 2n, name: 'moss' });
  await s.store.createPlant({ id: 3n, name: 'ivy' });
  await s.sequencer.runOnce();
  const answers = await Promise.all(readers);
  const pages = await Promise.all(answers.map(async (res) => ({ ids: (await events(res)).map((e) => e.data.id), link: res.headers.get('link') })));
  const [whole, one] = [pages[0]!, pages[1]!];
  assert.deepEqual(whole, { ids: [2, 3], link: null });
  assert.deepEqual(one.ids, [2]);
  const [second] = await events(await feed(s, `?after=${first!.id}`));
  assert.equal(one.link, `</events?after=${second!.id}&limit=1>; rel="next"`);
  assert.deepEqual(pages, [whole, one, whole, one]);
  await waitingIs(0);

  // A reader that comes after that wake reads afresh: it waits for, and gets, the next event only.
  const next = feed(s, `?after=${(await events(await feed(s, `?after=${second!.id}`)))[0]!.id}&wait=30`);
  await waitingIs(1);
  assert.equal((await s.postPlant({ id: 4, name: 'moss' })).status, 200);
  assert.deepEqual((await events(await next)).map((e) => e.data.id), [4]);
});
