// Failed authentications are limited per client address (AUTH_FAILURES_PER_MINUTE). What the service does:
// - a bearer token that fails verification (unknown, malformed, expired, revoked) counts as one failure;
// - once an address reached the limit, every failing bearer attempt from it gets 429 with Retry-After for
//   the rest of the minute; a valid token still passes, so a guesser behind a shared NAT or proxy locks
//   nobody else out;
// - an IPv6 client counts by its /64, so a host cannot rotate through its addresses;
// - requests without a bearer token (401 without error) and valid tokens lacking a scope (403) do not count;
// - other addresses are not affected.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { errorOf, startApp, type TestApp } from '../helpers/app.js';
import { answered, postRaw } from '../helpers/raw-request.js';
import { postWith } from '../helpers/requests.js';

const LIMIT = 5;
const UNKNOWN = 'pst_' + 'Z'.repeat(43);
let nextId = 1;

/** POST /plants from another loopback source address, so the server sees a different client. */
async function postFrom(s: TestApp, localAddress: string, token: string): Promise<{ status: number; body: string }> {
  return answered(await postRaw(s.port, token, JSON.stringify({ id: nextId++, name: 'fern' }), { localAddress }));
}

async function exhaust(s: TestApp, token = UNKNOWN): Promise<void> {
  for (let i = 0; i < LIMIT; i++) {
    const res = await postWith(s, token, nextId++);
    assert.equal(res.status, 401, `attempt ${i + 1} of ${LIMIT} must still be a plain 401`);
    await errorOf(res);
  }
}

async function assertThrottled(res: Response): Promise<void> {
  assert.equal(res.status, 429);
  const retryAfter = res.headers.get('retry-after');
  assert.match(retryAfter ?? '', /^\d+$/, `Retry-After: ${retryAfter}`);
  assert.ok(Number(retryAfter) >= 1 && Number(retryAfter) <= 60, `Retry-After: ${retryAfter}`);
  await errorOf(res);
}

test('after AUTH_FAILURES_PER_MINUTE failed attempts, further attempts get 429 with Retry-After and an Error body', async (t) => {
  const s = await startApp(t, { config: { authFailuresPerMinute: LIMIT } });
  await exhaust(s);
  for (let i = 0; i < 3; i++) await assertThrottled(await postWith(s, UNKNOWN, nextId++));
  // Malformed tokens are attempts too.
  await assertThrottled(await postWith(s, 'nonsense', nextId++));
  assert.equal(await s.store.countPlants(), 0);
});

test('malformed, expired and revoked tokens each count as a failure', async (t) => {
  const s = await startApp(t, { config: { authFailuresPerMinute: LIMIT } });
  const expired = await s.tokens.create({ name: 'old', scopes: ['plants:write'], expiresAt: new Date(Date.now() - 1_000) });
  const revoked = await s.tokens.create({ name: 'gone', scopes: ['plants:write'] });
  await s.tokens.revoke(revoked.token.id);
  for (const token of ['short', expired.secret, revoked.secret, UNKNOWN, 'pst_' + 'y'.repeat(43)]) {
    assert.equal((await postWith(s, token, nextId++)).status, 401, token);
  }
  await assertThrottled(await postWith(s, UNKNOWN, nextId++));
});

test('a valid token passes from a throttled address, and failures from it stay throttled', async (t) => {
  const s = await startApp(t, { config: { authFailuresPerMinute: LIMIT } });
  await exhaust(s);
  await assertThrottled(await postWith(s, UNKNOWN, nextId++));
  const before = await s.store.countPlants();
  const ok = await postWith(s, s.token.write, nextId++);
  assert.equal(ok.status, 200, await ok.text());
  assert.equal(await s.store.countPlants(), before + 1);
  // Every other valid token too, read-only ones included, and a scope it lacks is still a 403, not a 429.
  assert.equal((await fetch(`${s.url}/plants`, { headers: { authorization: `Bearer ${s.token.read}` } })).status, 200);
  assert.equal((await postWith(s, s.token.read, nextId++)).status, 403);
  await assertThrottled(await postWith(s, UNKNOWN, nextId++));
  await assertThrottled(await postWith(s, 'nonsense', nextId++));
});

test('requests without a bearer token and successful ones do not count as failures', async (t) => {
  const s = await startApp(t, { config: { authFailuresPerMinute: LIMIT } });
  for (let i = 0; i < LIMIT * 3; i++) {
    const res = await postWith(s, i % 2 ? {} : { authorization: 'Basic dXNlcjpwYXNz' }, nextId++);
    assert.equal(res.status, 401);
    assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="plant-store"');
  }
  for (let i = 0; i < LIMIT * 2; i++) assert.equal((await postWith(s, s.token.write, nextId++)).status, 200);
  // LIMIT - 1 real failures still leave room: the budget was untouched by the requests above.
  for (let i = 0; i < LIMIT - 1; i++) assert.equal((await postWith(s, UNKNOWN, nextId++)).status, 401);
  assert.equal((await postWith(s, s.token.write, nextId++)).status, 200);
  assert.equal((await postWith(s, UNKNOWN, nextId++)).status, 401);
  await assertThrottled(await postWith(s, UNKNOWN, nextId++));
});

test('requests without a token still get the 401 challenge from a throttled address', async (t) => {
  const s = await startApp(t, { config: { authFailuresPerMinute: LIMIT } });
  await exhaust(s);
  const res = await postWith(s, {}, nextId++);
  assert.equal(res.status, 401);
  assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="plant-store"');
  await errorOf(res);
});

test('throttling one address does not affect another', async (t) => {
  const s = await startApp(t, { config: { authFailuresPerMinute: LIMIT } });
  await exhaust(s);
  await assertThrottled(await postWith(s, UNKNOWN, nextId++));
  // 127.0.0.2 is another client as far as the server can tell.
  const other = await postFrom(s, '127.0.0.2', s.token.write);
  assert.equal(other.status, 200, other.body);
  const otherBad = await postFrom(s, '127.0.0.2', UNKNOWN);
  assert.equal(otherBad.status, 401, otherBad.body);
  // The first address is still throttled.
  await assertThrottled(await postWith(s, UNKNOWN, nextId++));
});

/** A request as the trusted proxy at 127.0.0.1 forwards it for `client`. */
function postForwarded(s: TestApp, client: string, token: string): Promise<Response> {
  return fetch(`${s.url}/plants`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'x-forwarded-for': client },
    body: JSON.stringify({ id: nextId++, name: 'fern' }),
  });
}

test('IPv6 clients are throttled per /64: another address of the same /64 is throttled, another /64 is not', async (t) => {
  const s = await startApp(t, { config: { authFailuresPerMinute: LIMIT, trustProxy: ['127.0.0.1'] } });
  // Each failure from a different address of one /64.
  for (let i = 1; i <= LIMIT; i++) assert.equal((await postForwarded(s, `2001:db8:1:2::${i.toString(16)}`, UNKNOWN)).status, 401);
  await assertThrottled(await postForwarded(s, '2001:db8:1:2:ffff:ffff:ffff:ffff', UNKNOWN));
  await assertThrottled(await postForwarded(s, '2001:0db8:0001:0002:0:0:0:abcd', UNKNOWN));
  assert.equal((await postForwarded(s, '2001:db8:1:2::77', s.token.write)).status, 200);
  assert.equal((await postForwarded(s, '2001:db8:1:3::1', UNKNOWN)).status, 401);
  // IPv4 clients still count one address each, whether or not written IPv4-mapped.
  for (let i = 0; i < LIMIT; i++) assert.equal((await postForwarded(s, '198.51.100.7', UNKNOWN)).status, 401);
  await assertThrottled(await postForwarded(s, '::ffff:198.51.100.7', UNKNOWN));
  assert.equal((await postForwarded(s, '198.51.100.8', UNKNOWN)).status, 401);
});
