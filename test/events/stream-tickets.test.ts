// Stream tickets, from a browser's side without the browser (test/events/browser-stream.test.ts has Chromium): a
// page makes a ticket with its token (POST /events/tickets) and opens GET /events?ticket= with no Authorization;
// the ticket opens nothing else, lives until its expiresAt (never past its token's), dies with its token, ends
// the streams it opened then, and never reaches a log. A token in the URL (access_token) is refused everywhere.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { errorOf, migratedDatabaseUrl, runCli, spawnServer, startApp, type TestApp } from '../helpers/app.js';
import { openStream } from '../helpers/events.js';
import { testClock } from '../helpers/clock.js';
import { eventually } from '../helpers/sleep.js';

const TICKET = /^pse_[A-Za-z0-9_-]{43}$/;

async function makeTicket(url: string, token: string): Promise<{ ticket: string; expiresAt: string }> {
  const res = await fetch(`${url}/events/tickets`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
  assert.equal(res.status, 201, await res.clone().text());
  assert.equal(res.headers.get('cache-control'), 'no-store');
  return (await res.json()) as { ticket: string; expiresAt: string };
}

/** The stream as an EventSource opens it: the ticket in the URL, no Authorization. */
function streamWithTicket(url: string, ticket: string, headers: Record<string, string> = {}, query = '') {
  return openStream(url, '', headers, `?ticket=${ticket}${query}`);
}

async function post(s: TestApp, id: number): Promise<void> {
  const res = await s.postPlant({ id, name: `p${id}` });
  assert.equal(res.status, 200, await res.clone().text());
}

test('a ticket made with a plants:read token opens the stream and a page of GET /events, without Authorization, until its expiresAt', async (t) => {
  const clock = testClock();
  const s = await startApp(t, { clock, config: { eventsTicketSeconds: 120 } });
  const before = clock.now();
  const { ticket, expiresAt } = await makeTicket(s.url, s.token.read);
  assert.match(ticket, TICKET);
  assert.ok(Math.abs(Date.parse(expiresAt) - (before + 120_000)) < 5_000, `expiresAt ${expiresAt} is EVENTS_TICKET_SECONDS from now`);
  assert.notEqual((await makeTicket(s.url, s.token.read)).ticket, ticket, 'each ticket is new');

  const stream = await streamWithTicket(s.url, ticket);
  assert.equal(stream.status, 200, JSON.stringify(stream.error));
  await post(s, 1);
  const [m] = await stream.received(1);
  assert.equal(m!.event, 'newPlant');
  const page = await fetch(`${s.url}/events?ticket=${ticket}`);
  assert.equal(page.status, 200);
  assert.equal(((await page.json()) as unknown[]).length, 1);
  stream.close();

  // A write-only token makes none; a token that expires sooner gives its ticket its own end.
  const writer = await fetch(`${s.url}/events/tickets`, { method: 'POST', headers: { authorization: `Bearer ${s.token.write}` } });
  assert.equal(writer.status, 403);
  const soon = new Date(clock.now() + 30_000);
  const short = await s.tokens.create({ name: 'short', scopes: ['plants:read'], expiresAt: soon });
  assert.equal((await makeTicket(s.url, short.secret)).expiresAt, soon.toISOString());

  clock.advance(121_000);
  const late = await fetch(`${s.url}/events?ticket=${ticket}`, { headers: { accept: 'text/event-stream' } });
  assert.equal(late.status, 401);
  assert.match(late.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
  assert.deepEqual(await errorOf(late), { error: 401, message: 'The ticket is expired: make a new one with POST /events/tickets.' });
});

test('a ticket opens GET /events only; a token never goes in a URL; one credential at a time', async (t) => {
  const s = await startApp(t);
  const { ticket } = await makeTicket(s.url, s.token.all);
  for (const path of [`/plants?ticket=${ticket}`, `/plants/1?ticket=${ticket}`, `/webhooks?ticket=${ticket}`]) {
    const res = await fetch(`${s.url}${path}`);
    assert.equal(res.status, 401, path);
    assert.equal((await errorOf(res)).message, 'A stream ticket opens GET /events only: send Authorization: Bearer <token>.');
  }
  const create = await fetch(`${s.url}/events/tickets?ticket=${ticket}`, { method: 'POST' });
  assert.equal(create.status, 401, 'a ticket does not make tickets');
  // As a bearer token it is no token at all.
  const asBearer = await fetch(`${s.url}/events`, { headers: { authorization: `Bearer ${ticket}` } });
  assert.equal(asBearer.status, 401);
  assert.equal((await errorOf(asBearer)).message, 'The access token is not valid.');
  const unknown = await fetch(`${s.url}/events?ticket=pse_${'Q'.repeat(43)}`, { headers: { accept: 'text/event-stream' } });
  assert.deepEqual([unknown.status, (await errorOf(unknown)).message], [401, 'The ticket is not valid: make a new one with POST /events/tickets.']);

  const both = await fetch(`${s.url}/events?ticket=${ticket}`, { headers: { authorization: `Bearer ${s.token.read}` } });
  assert.deepEqual([both.status, (await errorOf(both)).message], [400, 'Send a token in Authorization or a ticket in the query, not both.']);

  // access_token (RFC 6750 2.3) is refused even with a good token, here and on the stream: without Authorization
  // as no credentials (401), beside a good one as a malformed request (400).
  for (const path of [`/plants?access_token=${s.token.all}`, `/events?access_token=${s.token.all}`]) {
    const alone = await fetch(`${s.url}${path}`, { headers: { accept: 'text/event-stream' } });
    assert.equal(alone.status, 401, path);
    assert.equal(alone.headers.get('www-authenticate'), 'Bearer realm="plant-store"');
    assert.match((await errorOf(alone)).message, /^A token never goes in a URL: send Authorization: Bearer <token>/);
    const beside = await fetch(`${s.url}${path}`, { headers: { accept: 'text/event-stream', authorization: `Bearer ${s.token.all}` } });
    assert.equal(beside.status, 400, path);
    assert.match((await errorOf(beside)).message, /^A token never goes in a URL/);
  }
});

test("a revoked token's tickets stop opening streams, and the streams they and the token opened end", async (t) => {
  const s = await startApp(t, { config: { tokenCacheTtlMs: 0, eventsHeartbeatSeconds: 1 } });
  const reader = await s.tokens.create({ name: 'page', scopes: ['plants:read'] });
  const { ticket } = await makeTicket(s.url, reader.secret);
  const byTicket = await streamWithTicket(s.url, ticket);
  const byToken = await openStream(s.url, reader.secret);
  assert.deepEqual([byTicket.status, byToken.status], [200, 200]);
  await post(s, 1);
  await byTicket.received(1);

  assert.ok(await s.tokens.revoke(reader.token.id));
  assert.deepEqual(await Promise.all([byTicket.ended, byToken.ended]), ['ended', 'ended'], 'both streams end, within a heartbeat');
  const again = await fetch(`${s.url}/events?ticket=${ticket}`, { headers: { accept: 'text/event-stream' } });
  assert.deepEqual([again.status, (await errorOf(again)).message], [401, 'The ticket is revoked: its token was revoked.']);
  // Another token's streams go on.
  const other = await openStream(s.url, s.token.read);
  await post(s, 2);
  await other.received(1);
  other.close();
});

test('CORS: a page on an allowed origin opens the stream with a ticket and reads it; its reconnect header is allowed', async (t) => {
  const origin = 'http://127.0.0.1:9';
  const s = await startApp(t, { config: { corsOrigins: [origin] } });
  const preflight = await fetch(`${s.url}/events/tickets`, {
    method: 'OPTIONS',
    // A preflight is CORS's, outside the document.
    headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization', 'x-conformance': 'skip' },
  });
  assert.equal(preflight.status, 204);
  assert.match(preflight.headers.get('access-control-allow-methods') ?? '', /\bPOST\b/);
  const streamPreflight = await fetch(`${s.url}/events`, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': 'GET', 'access-control-request-headers': 'last-event-id', 'x-conformance': 'skip' },
  });
  assert.match(streamPreflight.headers.get('access-control-allow-headers') ?? '', /\bLast-Event-ID\b/);
  const { ticket } = await makeTicket(s.url, s.token.read);
  const stream = await streamWithTicket(s.url, ticket, { origin });
  assert.equal(stream.status, 200);
  assert.equal(stream.headers.get('access-control-allow-origin'), origin);
  stream.close();
});

test('no ticket and no access_token value reaches the log of a server, whatever the request did with them', async (t) => {
  const env = { DATABASE_URL: await migratedDatabaseUrl(t), LOG_LEVEL: 'trace', BOOTSTRAP_TOKEN: 'false' };
  const created = await runCli(['token', 'create', '--scopes', 'plants:read', '--name', 'page'], env);
  assert.equal(created.code, 0, created.stderr);
  const token = created.stdout.trimEnd().split('\n').at(-1)!;
  const server = await spawnServer(t, env);
  const { ticket } = await makeTicket(server.url, token);
  const stream = await streamWithTicket(server.url, ticket);
  assert.equal(stream.status, 200);
  stream.close();
  await stream.ended;
  for (const path of [`/events?ticket=${ticket}`, `/plants?ticket=${ticket}`, `/events?access_token=${token}`, `/events?ticket=${ticket}&limit=0`]) {
    await (await fetch(`${server.url}${path}`, { headers: { 'x-request-id': 'ticket-log' } })).arrayBuffer();
  }
  // The abandoned stream's access line is written when its close is seen.
  await eventually(() => server.stdout().split('\n').filter((l) => l.includes('"ticket-log"')).length >= 4, 'the access lines');
  const out = server.stdout() + server.stderr();
  assert.ok(!out.includes(ticket.slice(4)), 'the ticket is in the log');
  assert.ok(!out.includes(token.slice(4)), 'the token is in the log');
});
