// A stream's place, from outside: a reader that leaves (its socket destroyed, or closed for sending while it
// keeps reading) frees its place under EVENTS_MAX_STREAMS_PER_TOKEN within a second, with no heartbeat and no
// event written meanwhile; a ticket's stream ends at the ticket's expiresAt.
import { test } from 'node:test';
import net from 'node:net';
import { once } from 'node:events';
import assert from 'node:assert/strict';
import { startApp, type TestApp } from '../helpers/app.js';
import { openStream } from '../helpers/events.js';
import { capturedLogger } from '../helpers/log-lines.js';
import { eventually, within } from '../helpers/sleep.js';

/** A stream opened over a bare TCP socket that stays open for reading after it closes its sending side. */
async function rawStream(s: TestApp, token: string, requestId: string) {
  const socket = net.connect({ port: s.port, host: '127.0.0.1', allowHalfOpen: true });
  await once(socket, 'connect');
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
  const ended = once(socket, 'end');
  const closed = once(socket, 'close');
  socket.write(`GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\nAccept: text/event-stream\r\nX-Request-Id: ${requestId}\r\n\r\n`);
  await eventually(() => received.includes('retry: '), () => `the stream's head and retry line (got ${JSON.stringify(received)})`);
  assert.match(received, /^HTTP\/1\.1 200/);
  return { socket, ended, closed, received: () => received };
}

/** Opens streams until one is accepted: how long a new reader of the same token waits for a place. */
async function placeWithin(s: TestApp, token: string, ms: number): Promise<number> {
  const start = Date.now();
  const next = await eventually(async () => {
    const tried = await openStream(s.url, token);
    if (tried.status === 200) return tried;
    assert.equal(tried.status, 429, JSON.stringify(tried.error));
    return false;
  }, `a place for a new stream within ${ms} ms of the reader leaving`, ms, 20);
  const took = Date.now() - start;
  next.close();
  await next.ended;
  return took;
}

for (const how of ['destroys its socket', 'closes its sending side and keeps reading'] as const) {
  test(`a reader that ${how} frees its stream's place within a second, with no heartbeat meanwhile`, async (t) => {
    const { lines, logger } = capturedLogger();
    // The heartbeat is far off: only noticing the socket can free the place in time.
    const s = await startApp(t, { logger, config: { eventsMaxStreamsPerToken: 1, eventsHeartbeatSeconds: 60 } });
    const reader = await rawStream(s, s.token.read, 'the-reader');
    assert.equal((await openStream(s.url, s.token.read)).status, 429, 'the one place is taken');
    if (how === 'destroys its socket') reader.socket.destroy();
    else reader.socket.end();
    const took = await placeWithin(s, s.token.read, 1_000);
    t.diagnostic(`a new stream accepted ${took} ms after the reader left`);
    if (how !== 'destroys its socket') {
      // The server ended the stream as a response (its last chunk), then closed the connection.
      assert.equal(await within(reader.ended.then(() => 'ended'), 1_000, 'still open'), 'ended');
      assert.match(reader.received(), /\r\n0\r\n\r\n$/, 'the chunked response was ended, not cut');
      await reader.closed;
    }
    // One access line for the stream, whichever way it ended.
    const mine = () => lines.filter((l) => l.msg === 'request completed' && l.reqId === 'the-reader');
    await eventually(() => mine().length > 0, 'the access line of the stream');
    assert.deepEqual(mine().map((l) => [l.path, l.statusCode]), [['/events', 200]]);
  });
}

test("a ticket's stream ends at the ticket's expiresAt, and a token's at the token's expiry, not at a heartbeat after", async (t) => {
  const s = await startApp(t, { config: { eventsHeartbeatSeconds: 60 } });
  // A ticket never outlives its token: a token with a second and a half to live gives its ticket that end.
  const expires = new Date(Date.now() + 1_500);
  const reader = await s.tokens.create({ name: 'page', scopes: ['plants:read'], expiresAt: expires });
  const made = await fetch(`${s.url}/events/tickets`, { method: 'POST', headers: { authorization: `Bearer ${reader.secret}` } });
  assert.equal(made.status, 201);
  const { ticket, expiresAt } = (await made.json()) as { ticket: string; expiresAt: string };
  assert.equal(expiresAt, expires.toISOString());
  const byTicket = await openStream(s.url, '', {}, `?ticket=${ticket}`);
  const byToken = await openStream(s.url, reader.secret);
  assert.deepEqual([byTicket.status, byToken.status], [200, 200]);
  const endedAt = await Promise.all([byTicket, byToken].map(async (st) => {
    assert.equal(await within(st.ended, 5_000, 'still open'), 'ended');
    return Date.now();
  }));
  for (const at of endedAt) {
    const late = at - expires.getTime();
    t.diagnostic(`a stream ended ${late} ms after expiresAt`);
    assert.ok(late >= 0, `ended ${-late} ms before expiresAt`);
    assert.ok(late < 500, `ended ${late} ms after expiresAt`);
  }
});
