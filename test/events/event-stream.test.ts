// GET /events with Accept: text/event-stream, read as a client reads it, with eventsource-parser: every event after
// the cursor and then each one as it is placed, with the feed's ids (the webhooks' webhook-id) and its data byte
// for byte; a reader that reconnects with Last-Event-ID misses nothing and sees nothing twice, also across a
// SIGTERM, a new server and WORKERS=2; refusals come before the stream, as Error answers; idle streams keep alive.
import { test } from 'node:test';
import net from 'node:net';
import { once } from 'node:events';
import assert from 'node:assert/strict';
import { spawnServer, startApp, type TestApp } from '../helpers/app.js';
import { databaseWithToken } from '../helpers/cli.js';
import { openStream } from '../helpers/events.js';
import { eventually } from '../helpers/sleep.js';
import { addSubscription, startDeliveryApp } from '../helpers/webhooks.js';
import { startReceiver } from '../helpers/receiver.js';
import { createPlant } from '../helpers/requests.js';

function write(url: string, token: string, method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
}

/** Each event's data exactly as the feed's page holds it (the page embeds the stored body as it is). */
async function feedData(s: TestApp): Promise<Map<string, string>> {
  const text = await (await fetch(`${s.url}/events?limit=1000`, { headers: { authorization: `Bearer ${s.token.read}` } })).text();
  return new Map([...text.matchAll(/"id":"(msg_[^"]+)".*?"data":(\{[^}]*\})\}/g)].map((m) => [m[1]!, m[2]!]));
}

test('a stream sends each event as it is placed, from the end when it names no cursor: ids, types and data as the feed and the webhooks give them, every int64 digit', async (t) => {
  const s = await startDeliveryApp(t, { background: true });
  let secret = '';
  const rx = await startReceiver(t, () => secret);
  secret = (await addSubscription(s.store, rx.url, 'wh_stream')).secret;
  await createPlant(s.url, s.token.write, 1, 'before the stream');
  await rx.until((r) => r.byId.size === 1);

  const stream = await openStream(s.url, s.token.read);
  assert.equal(stream.status, 200);
  assert.equal(stream.headers.get('content-type'), 'text/event-stream; charset=utf-8');
  assert.equal(stream.headers.get('cache-control'), 'no-store');
  const big = 2n ** 53n + 1n;
  await createPlant(s.url, s.token.write, big, 'Épipremnum aureum');
  assert.equal((await write(s.url, s.token.write, 'PUT', `/plants/${big}`, { name: 'pothos' })).status, 200);
  assert.equal((await write(s.url, s.token.write, 'DELETE', `/plants/${big}`)).status, 204);
  const got = await stream.received(3);
  assert.equal(stream.retry, 2000);
  assert.deepEqual(got.map((m) => m.event), ['newPlant', 'plantUpdated', 'plantDeleted']);
  assert.match(got[0]!.data, new RegExp(`^\\{"id":${big},`), 'the id digit for digit, not a rounded double');

  const feed = await feedData(s);
  await rx.until((r) => r.byId.size === 4);
  for (const m of got) {
    assert.equal(m.data, feed.get(m.id!), `the feed's data of ${m.id}`);
    assert.equal(m.data, rx.byId.get(m.id!)?.body, `the delivery with webhook-id ${m.id}`);
  }
  assert.equal(stream.messages.length, 3, 'nothing from before the stream opened');
  stream.close();
  assert.equal(await stream.ended, 'closed');
  assert.deepEqual(rx.problems, []);
});

test('a reader that reconnects with Last-Event-ID gets what it missed once, in order, then the live events; the header wins over after', async (t) => {
  const s = await startApp(t);
  await createPlant(s.url, s.token.write, 1, 'p1');
  const [first] = await eventually(async () => (await s.store.events.readAfter(null, 10)).length === 1 && s.store.events.readAfter(null, 10), 'the first event placed');
  const firstId = first!.id;

  const one = await openStream(s.url, s.token.read, {}, `?after=${firstId}`);
  for (const id of [2, 3]) await createPlant(s.url, s.token.write, id, `p${id}`);
  const seen = await one.received(2);
  one.close();
  await one.ended;
  for (const id of [4, 5, 6]) await createPlant(s.url, s.token.write, id, `p${id}`);

  // after names the first event; Last-Event-ID, the last one seen, wins (as EventSource sends it on reconnect).
  const two = await openStream(s.url, s.token.read, { 'last-event-id': seen.at(-1)!.id! }, `?after=${firstId}`);
  const missed = await two.received(3);
  assert.deepEqual(missed.map((m) => (JSON.parse(m.data) as { id: number }).id), [4, 5, 6]);
  await createPlant(s.url, s.token.write, 7, 'p7');
  const all = await two.received(4);
  assert.deepEqual(all.map((m) => (JSON.parse(m.data) as { id: number }).id), [4, 5, 6, 7]);
  const ids = [...seen, ...all].map((m) => m.id);
  assert.equal(new Set(ids).size, ids.length, 'no event twice');
  two.close();
});

test('refusals come before the stream, as Error answers: a malformed or unknown Last-Event-ID is 400, a token over its streams 429 with Retry-After; idle streams get keep-alive comments', async (t) => {
  const s = await startDeliveryApp(t, { config: { eventsMaxStreamsPerToken: 1, eventsHeartbeatSeconds: 1 } });
  const malformed = await openStream(s.url, s.token.read, { 'last-event-id': 'not-an-id' });
  assert.equal(malformed.status, 400);
  assert.equal(malformed.error?.error, 400);
  assert.match(malformed.error!.message, /last-event-id must be an event id/);
  const unknown = await openStream(s.url, s.token.read, { 'last-event-id': 'msg_AAAAAAAAAAAAAAAAAAAAAA' });
  assert.equal(unknown.status, 400);
  assert.match(unknown.error!.message, /names no event of the feed/);

  const open = await openStream(s.url, s.token.read);
  assert.equal(open.status, 200);
  const over = await openStream(s.url, s.token.read);
  assert.equal(over.status, 429);
  assert.ok(Number(over.headers.get('retry-after')) >= 1);
  assert.match(over.error!.message, /EVENTS_MAX_STREAMS_PER_TOKEN/);
  // Another token has its own share; the page is not a stream and is never refused for streams.
  const other = (await s.tokens.create({ name: 'other', scopes: ['plants:read'] })).secret;
  const theirs = await openStream(s.url, other);
  assert.equal(theirs.status, 200);
  assert.equal((await fetch(`${s.url}/events`, { headers: { authorization: `Bearer ${s.token.read}` } })).status, 200);

  await eventually(() => open.comments.includes('keep-alive'), 'a keep-alive comment on the idle stream');
  // A closed stream frees its place.
  open.close();
  await open.ended;
  await eventually(async () => {
    const again = await openStream(s.url, s.token.read);
    again.close();
    return again.status === 200;
  }, 'a place again once the first stream closed');
  theirs.close();
});

test('SIGTERM ends every stream cleanly; the reader resumes on a new server with Last-Event-ID, WORKERS=2, nothing missed or twice', async (t) => {
  const { databaseUrl, token } = await databaseWithToken(t);
  const env = { DATABASE_URL: databaseUrl, BOOTSTRAP_TOKEN: 'false', WORKERS: '2' };
  const first = await spawnServer(t, env);
  const stream = await openStream(first.url, token);
  // Several writes, so both workers take some: the stream hears of every one.
  for (const id of [1, 2, 3, 4]) await createPlant(first.url, token, id, `p${id}`);
  const before = await stream.received(4);
  first.proc.kill('SIGTERM');
  assert.equal(await stream.ended, 'ended', 'the server ended the stream');
  assert.equal(await first.exited, 0);

  const second = await spawnServer(t, env);
  for (const id of [5, 6]) await createPlant(second.url, token, id, `p${id}`);
  const resumed = await openStream(second.url, token, { 'last-event-id': before.at(-1)!.id! });
  await createPlant(second.url, token, 7, 'p7');
  const after = await resumed.received(3);
  const plants = [...before, ...after].map((m) => (JSON.parse(m.data) as { id: number }).id);
  assert.deepEqual(plants, [1, 2, 3, 4, 5, 6, 7]);
  resumed.close();
  await resumed.ended;
  assert.match(first.stdout(), /"path":"\/events","statusCode":200/, 'the stream has its access line');
});

test('a reader that stops reading is cut off once its socket stays full for EVENTS_STREAM_STALL_SECONDS, freeing its place', async (t) => {
  const s = await startApp(t, { config: { eventsStreamStallSeconds: 1, eventsMaxStreamsPerToken: 1 } });
  // A client that sends the request, then reads nothing: the kernel's buffers fill, then the server's.
  const socket = net.connect(s.port, '127.0.0.1');
  await once(socket, 'connect');
  socket.write(`GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${s.token.read}\r\nAccept: text/event-stream\r\n\r\n`);
  let received = '';
  socket.once('data', (chunk: Buffer) => {
    received += chunk.toString();
    socket.pause();
  });
  const closed = once(socket, 'close');
  await eventually(() => received.startsWith('HTTP/1.1 200'), 'the stream opened');
  // About 12 MB of events, more than a loopback socket's buffers hold.
  const name = 'n'.repeat(250);
  for (let batch = 0; batch < 8; batch++) {
    await s.store.importPlants(Array.from({ length: 5_000 }, (_, i) => ({ id: BigInt(batch * 5_000 + i + 1), name })));
  }
  // Cut off: its place is free again, under a cap of one stream per token.
  const next = await eventually(async () => {
    const tried = await openStream(s.url, s.token.read);
    if (tried.status === 200) return tried;
    return false;
  }, 'a place once the stalled stream was cut off', 30_000, 200);
  socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
  socket.resume();
  await closed;
  const events = received.split('\n').filter((l) => l.startsWith('id: ')).length;
  assert.ok(events < 40_000, `the stalled reader got ${events} of 40,000 events, then the end`);
  next.close();
});
