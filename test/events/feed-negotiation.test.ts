// GET /events as a client meets its negotiation: Accept decides page or stream by its q-values (RFC 9110,
// section 12.5.1); Last-Event-ID is held to the document's pattern on a page and a stream alike (empty means
// none); and a cursor the feed does not hold is named as the client sent it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startApp } from '../helpers/app.js';
import { openStream, sequenced } from '../helpers/events.js';
import { createPlant } from '../helpers/requests.js';
import { parseAccept, prefersEventStream, qualityOf } from '../../src/http/accept.js';

test('Accept is read by its q-values: the most specific range counts, and a stream needs text/event-stream named and preferred', () => {
  assert.deepEqual(parseAccept('text/event-stream;q=0.5, application/json'), [
    { type: 'text', subtype: 'event-stream', q: 0.5 },
    { type: 'application', subtype: 'json', q: 1 },
  ]);
  assert.equal(qualityOf(parseAccept('text/*;q=0.3, */*;q=0.1, text/event-stream;q=0.7'), 'text/event-stream'), 0.7);
  assert.equal(qualityOf(parseAccept('text/*;q=0.3, */*;q=0.1'), 'application/json'), 0.1);
  const cases: Array<[string | undefined, boolean]> = [
    [undefined, false],
    ['', false],
    ['text/event-stream', true],
    ['TEXT/Event-Stream; charset=utf-8', true],
    ['text/event-stream;q=0.5, application/json', false],
    ['application/json;q=0.5, text/event-stream', true],
    ['application/json, text/event-stream', true],
    ['text/event-stream;q=0', false],
    ['text/event-stream;q=0.8, application/*;q=0.9', false],
    ['text/event-stream;q=0.8, */*;q=0.9', false],
    ['text/event-stream;q=0.9, */*;q=0.8', true],
    ['*/*', false],
    ['text/*', false],
    ['text/event-stream;q=abc', false],
    ['text/event-stream;q=2', false],
    ['text/event-stream;q=1.000, application/json;q=0.999', true],
    ['text/event-stream;foo="a,b";q=0.4, application/json;q=0.5', false],
  ];
  for (const [accept, stream] of cases) assert.equal(prefersEventStream(accept), stream, String(accept));
});

test('GET /events: JSON preferred over the stream gets a page; the stream preferred gets the stream', async (t) => {
  const s = await startApp(t);
  await createPlant(s.url, s.token.write, 1, 'fern');
  await sequenced(s.store);
  const page = (accept: string) => fetch(`${s.url}/events`, { headers: { authorization: `Bearer ${s.token.read}`, accept } });
  for (const accept of ['text/event-stream;q=0.5, application/json', 'application/json', 'text/event-stream;q=0', '*/*', 'text/event-stream;q=0.8, application/*;q=0.9']) {
    const res = await page(accept);
    assert.equal(res.status, 200, accept);
    assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8', accept);
    assert.equal(((await res.json()) as unknown[]).length, 1, accept);
  }
  for (const accept of ['application/json;q=0.5, text/event-stream', 'text/event-stream, application/json']) {
    const stream = await openStream(s.url, s.token.read, { accept });
    assert.equal(stream.status, 200, accept);
    assert.equal(stream.headers.get('content-type'), 'text/event-stream; charset=utf-8', accept);
    stream.close();
    await stream.ended;
  }
});

test('Last-Event-ID: a value that is not an event id is 400 on a page as on a stream; an empty one is none; an unknown one is named as sent', async (t) => {
  const s = await startApp(t);
  await createPlant(s.url, s.token.write, 1, 'fern');
  await createPlant(s.url, s.token.write, 2, 'moss');
  await sequenced(s.store);
  const auth = { authorization: `Bearer ${s.token.read}` };
  const ids = ((await (await fetch(`${s.url}/events`, { headers: auth })).json()) as Array<{ id: string }>).map((e) => e.id);
  assert.equal(ids.length, 2);
  const message = 'headers/last-event-id must be an event id (msg_ and 22 base64url characters), as the stream sent it.';

  // A page: the header is checked, and a page reads from `after`, never from the header.
  for (const method of ['GET', 'HEAD']) {
    const bad = await fetch(`${s.url}/events`, { method, headers: { ...auth, 'last-event-id': 'nope' } });
    assert.equal(bad.status, 400, method);
    if (method === 'GET') assert.deepEqual(await bad.json(), { error: 400, message });
  }
  const empty = await fetch(`${s.url}/events`, { headers: { ...auth, 'last-event-id': '' } });
  assert.equal(empty.status, 200);
  assert.equal(((await empty.json()) as unknown[]).length, 2);
  const ignored = await fetch(`${s.url}/events?after=${ids[0]}`, { headers: { ...auth, 'last-event-id': ids[1]! } });
  assert.deepEqual(((await ignored.json()) as Array<{ id: string }>).map((e) => e.id), [ids[1]]);

  // A stream: the same 400; an empty header is no cursor, so `after` is (and without it, the end of the feed).
  const malformed = await openStream(s.url, s.token.read, { 'last-event-id': 'nope' });
  assert.equal(malformed.status, 400);
  assert.deepEqual(malformed.error, { error: 400, message });
  const fromAfter = await openStream(s.url, s.token.read, { 'last-event-id': '' }, `?after=${ids[0]}`);
  assert.equal(fromAfter.status, 200);
  assert.deepEqual((await fromAfter.received(1)).map((m) => m.id), [ids[1]]);
  fromAfter.close();
  await fromAfter.ended;

  // An id the feed does not hold: the message names what the client sent.
  const unknown = 'msg_AAAAAAAAAAAAAAAAAAAAAA';
  const byHeader = await openStream(s.url, s.token.read, { 'last-event-id': unknown }, `?after=${ids[0]}`);
  assert.equal(byHeader.status, 400);
  assert.deepEqual(byHeader.error, { error: 400, message: `Last-Event-ID ${unknown} names no event of the feed; use the id of an event the feed or a webhook gave you.` });
  const byQuery = await openStream(s.url, s.token.read, {}, `?after=${unknown}`);
  assert.equal(byQuery.status, 400);
  assert.deepEqual(byQuery.error, { error: 400, message: `after=${unknown} names no event of the feed; use the id of an event the feed or a webhook gave you.` });
});

test('a ticket is a credential: any value that is not a live ticket is 401 whatever its shape, as the document says; beside a token, 400', async (t) => {
  const s = await startApp(t);
  for (const ticket of ['abc', `pse_${'A'.repeat(43)}`]) {
    const res = await fetch(`${s.url}/events?ticket=${ticket}`);
    assert.equal(res.status, 401, ticket);
    assert.match(res.headers.get('www-authenticate') ?? '', /error="invalid_token"/, ticket);
    assert.deepEqual(await res.json(), { error: 401, message: 'The ticket is not valid: make a new one with POST /events/tickets.' }, ticket);
  }
  const both = await fetch(`${s.url}/events?ticket=abc`, { headers: { authorization: `Bearer ${s.token.read}` } });
  assert.equal(both.status, 400);
  assert.deepEqual(await both.json(), { error: 400, message: 'Send a token in Authorization or a ticket in the query, not both.' });
});
