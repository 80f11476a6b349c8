// Failed authentications are limited per client address (AUTH_FAILURES_PER_MINUTE). What the service does:
// - a bearer token that fails verification (unknown, malformed, expired, revoked) counts as one failure;
// - once an address reached the limit, every bearer attempt from it gets 429 with Retry-After for the
//   rest of the minute, valid tokens included (otherwise a guesser would still learn which guess is right);
// - requests without a bearer token (401 without error) and valid tokens lacking a scope (403) do not count;
// - other addresses are not affected.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { errorOf, startApp, type TestApp } from '../helpers/app.js';
import { answered, postRaw } from '../helpers/raw-request.js';

const LIMIT = 5;
const UNKNOWN = 'pst_' + 'Z'.repeat(43);
let nextId = 1;

function postWith(s: TestApp, authorization: string | undefined): Promise<Response> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (authorization) headers.authorization = authorization;
  return fetch(`${s.url}/plants`, { method: 'POST', headers, body: JSON.stringify({ id: nextId++, name: 'fern' }) });
}

/** POST /plants from another loopback source address, so the server sees a different client. */
async function postFrom(s: TestApp, localAddress: string, token: string): Promise<{ status: number; body: string }> {
  return answered(await postRaw(s.port, token, JSON.stringify({ id: nextId++, name: 'fern' }), { localAddress }));
}

async function exhaust(s: TestApp, token = UNKNOWN): Promise<void> {
  for (let i = 0; i < LIMIT; i++) {
    const res = await postWith(s, `Bearer ${token}`);
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
  for (let i = 0; i < 3; i++) await assertThrottled(await postWith(s, `Bearer ${UNKNOWN}`));
  // Malformed tokens are attempts too.
  await assertThrottled(await postWith(s, 'Bearer nonsense'));
  assert.equal(await s.store.countPlants(), 0);
});

test('malformed, expired and revoked tokens each count as a failure', async (t) => {
  const s = await startApp(t, { config: { authFailuresPerMinute: LIMIT } });
  const expired = await s.tokens.create({ name: 'old', scopes: ['plants:write'], expiresAt: new Date(Date.now() - 1_000) });
  const revoked = await s.tokens.create({ name: 'gone', scopes: ['plants:write'] });
  await s.tokens.revoke(revoked.token.id);
  for (const token of ['short', expired.secret, revoked.secret, UNKNOWN, 'pst_' + 'y'.repeat(43)]) {
    assert.equal((await postWith(s, `Bearer ${token}`)).status, 401, token);
  }
  await assertThrottled(await postWith(s, `Bearer ${UNKNOWN}`));
});

test('a throttled address is refused even with a valid token, and nothing is stored', async (t) => {
  const s = await startApp(t, { config: { authFailuresPerMinute: LIMIT } });
  assert.equal((await postWith(s, `Bearer ${s.token.write}`)).status, 200);
  const before = await s.store.countPlants();
  await exhaust(s);
  await assertThrottled(await postWith(s, `Bearer ${s.token.write}`));
  assert.equal(await s.store.countPlants(), before);
});

test('requests without a bearer token and successful ones do not count as failures', async (t) => {
  const s = await startApp(t, { config: { authFailuresPerMinute: LIMIT } });
  for (let i = 0; i < LIMIT * 3; i++) {
    const res = await postWith(s, i % 2 ? undefined : 'Basic dXNlcjpwYXNz');
    assert.equal(res.status, 401);
    assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="plant-store"');
  }
  for (let i = 0; i < LIMIT * 2; i++) assert.equal((await postWith(s, `Bearer ${s.token.write}`)).status, 200);
  // LIMIT - 1 real failures still leave room: the budget was untouched by the requests above.
  for (let i = 0; i < LIMIT - 1; i++) assert.equal((await postWith(s, `Bearer ${UNKNOWN}`)).status, 401);
  assert.equal((await postWith(s, `Bearer ${s.token.write}`)).status, 200);
  assert.equal((await postWith(s, `Bearer ${UNKNOWN}`)).status, 401);
  await assertThrottled(await postWith(s, `Bearer ${UNKNOWN}`));
});

test('requests without a token still get the 401 challenge from a throttled address', async (t) => {
  const s = await startApp(t, { config: { authFailuresPerMinute: LIMIT } });
  await exhaust(s);
  const res = await postWith(s, undefined);
  assert.equal(res.status, 401);
  assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="plant-store"');
  await errorOf(res);
});

test('throttling one address does not affect another', async (t) => {
  const s = await startApp(t, { config: { authFailuresPerMinute: LIMIT } });
  await exhaust(s);
  await assertThrottled(await postWith(s, `Bearer ${s.token.write}`));
  // 127.0.0.2 is another client as far as the server can tell.
  const other = await postFrom(s, '127.0.0.2', s.token.write);
  assert.equal(other.status, 200, other.body);
  const otherBad = await postFrom(s, '127.0.0.2', UNKNOWN);
  assert.equal(otherBad.status, 401, otherBad.body);
  // The first address is still throttled.
  await assertThrottled(await postWith(s, `Bearer ${s.token.write}`));
});
