// Rate limits as a client sees them: a token's quota per window with the IETF RateLimit fields on every
// authenticated answer and a 429 (Retry-After, Error body) past it; the per-address failure throttle's 429
// with its own policy; RATE_LIMIT=off; and TRUST_PROXY deciding whose X-Forwarded-For names the client.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { errorOf, startApp, type TestApp } from '../helpers/app.js';
import { testClock } from '../helpers/clock.js';
import { loadConfig } from '../../src/config.js';
import { storedPlant } from '../helpers/stored-plant.js';

const QUOTA = 5;
const UNKNOWN = 'pst_' + 'Z'.repeat(43);

function get(s: TestApp, path: string, token: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${s.url}${path}`, { headers: { authorization: `Bearer ${token}`, ...headers } });
}

function remaining(res: Response): number {
  const m = /^"token";r=(\d+);t=(\d+)$/.exec(res.headers.get('ratelimit') ?? '');
  assert.ok(m, `RateLimit: ${res.headers.get('ratelimit')}`);
  assert.ok(Number(m[2]) >= 1 && Number(m[2]) <= 60, `t within the window: ${m[2]}`);
  return Number(m[1]);
}

test('a token gets its quota per window, with RateLimit fields on every answer, then 429 with Retry-After', async (t) => {
  const s = await startApp(t, { config: { rateLimitPerToken: QUOTA, rateLimitWindowS: 60 } });
  const seen: number[] = [];
  for (let i = 0; i < QUOTA - 1; i++) {
    const res = await get(s, '/plants', s.token.all);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('ratelimit-policy'), `"token";q=${QUOTA};w=60`);
    seen.push(remaining(res));
    await res.arrayBuffer();
  }
  // An error answer after authentication counts and carries the fields too.
  const missing = await get(s, '/plants/12345', s.token.all);
  assert.equal(missing.status, 404);
  seen.push(remaining(missing));
  await errorOf(missing);
  assert.deepEqual(seen, [4, 3, 2, 1, 0]);

  const limited = await s.postPlant({ id: 1, name: 'over quota' }, { authorization: `Bearer ${s.token.all}` });
  assert.equal(limited.status, 429);
  const retryAfter = Number(limited.headers.get('retry-after'));
  assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
  assert.equal(limited.headers.get('ratelimit-policy'), `"token";q=${QUOTA};w=60`);
  assert.equal(remaining(limited), 0);
  assert.equal((await errorOf(limited)).error, 429);
  assert.equal(await storedPlant(s.store, 1n), undefined, 'a refused create stores nothing');

  // Another token has its own quota.
  const other = await get(s, '/plants', s.token.read);
  assert.equal(other.status, 200);
  assert.equal(remaining(other), QUOTA - 1);
});

test('the quota of a token is whole again once its window ends, and not before', async (t) => {
  const clock = testClock();
  const s = await startApp(t, { config: { rateLimitPerToken: 2, rateLimitWindowS: 10 }, clock });
  for (let i = 0; i < 2; i++) await (await get(s, '/plants', s.token.all)).arrayBuffer();
  const limited = await get(s, '/plants', s.token.all);
  assert.equal(limited.status, 429);
  assert.equal(limited.headers.get('retry-after'), '10');
  await errorOf(limited);
  clock.advance(9_000);
  const still = await get(s, '/plants', s.token.all);
  assert.equal(still.status, 429);
  assert.equal(still.headers.get('retry-after'), '1');
  await errorOf(still);
  clock.advance(1_000);
  const again = await get(s, '/plants', s.token.all);
  assert.equal(again.status, 200);
  assert.equal(remaining(again), 1);
  await again.arrayBuffer();
});

test('the failure throttle lifts when its minute ends', async (t) => {
  const clock = testClock();
  const s = await startApp(t, { config: { authFailuresPerMinute: 2 }, clock });
  for (let i = 0; i < 2; i++) await errorOf(await get(s, '/plants', UNKNOWN));
  clock.advance(59_000);
  const blocked = await get(s, '/plants', UNKNOWN);
  assert.equal(blocked.status, 429);
  assert.equal(blocked.headers.get('retry-after'), '1');
  assert.equal(blocked.headers.get('ratelimit'), '"auth-failures";r=0;t=1');
  await errorOf(blocked);
  clock.advance(1_000);
  const open = await get(s, '/plants', UNKNOWN);
  assert.equal(open.status, 401);
  await errorOf(open);
});

test('anonymous answers and health checks carry no token quota', async (t) => {
  const s = await startApp(t, { config: { rateLimitPerToken: QUOTA } });
  const anonymous = await fetch(`${s.url}/plants`);
  assert.equal(anonymous.status, 401);
  assert.equal(anonymous.headers.get('ratelimit'), null);
  await anonymous.arrayBuffer();
  for (let i = 0; i < QUOTA + 2; i++) {
    const health = await fetch(`${s.url}/healthz`);
    assert.equal(health.status, 200);
    assert.equal(health.headers.get('ratelimit'), null);
    await health.arrayBuffer();
  }
});

test('RATE_LIMIT=off: no per-token limit and no RateLimit fields', async (t) => {
  const s = await startApp(t, { config: { rateLimit: false, rateLimitPerToken: 2 } });
  for (let i = 0; i < 6; i++) {
    const res = await get(s, '/plants', s.token.all);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('ratelimit'), null);
    await res.arrayBuffer();
  }
});

test('the failure throttle 429 carries the "auth-failures" policy fields', async (t) => {
  const s = await startApp(t, { config: { authFailuresPerMinute: 3 } });
  for (let i = 0; i < 3; i++) await errorOf(await get(s, '/plants', UNKNOWN));
  const res = await get(s, '/plants', UNKNOWN);
  assert.equal(res.status, 429);
  assert.equal(res.headers.get('ratelimit-policy'), '"auth-failures";q=3;w=60');
  assert.match(res.headers.get('ratelimit') ?? '', /^"auth-failures";r=0;t=\d+$/);
  assert.match(res.headers.get('retry-after') ?? '', /^\d+$/);
  await errorOf(res);
});

test('TRUST_PROXY: X-Forwarded-For names the client only when the peer is a trusted proxy', async (t) => {
  const failures = 2;
  // Not trusted: every forwarded address is the one peer, so its failures add up.
  const plain = await startApp(t, { config: { authFailuresPerMinute: failures } });
  for (let i = 0; i < failures; i++) await errorOf(await get(plain, '/plants', UNKNOWN, { 'x-forwarded-for': `198.51.100.${i}` }));
  const blocked = await get(plain, '/plants', UNKNOWN, { 'x-forwarded-for': '198.51.100.99' });
  assert.equal(blocked.status, 429);
  await errorOf(blocked);

  // Trusted loopback proxy: each forwarded client has its own count.
  const proxied = await startApp(t, { config: { authFailuresPerMinute: failures, trustProxy: ['127.0.0.1/8'] } });
  for (let i = 0; i < failures; i++) await errorOf(await get(proxied, '/plants', UNKNOWN, { 'x-forwarded-for': '198.51.100.1' }));
  const first = await get(proxied, '/plants', UNKNOWN, { 'x-forwarded-for': '198.51.100.1' });
  assert.equal(first.status, 429);
  await errorOf(first);
  const second = await get(proxied, '/plants', UNKNOWN, { 'x-forwarded-for': '198.51.100.2' });
  assert.equal(second.status, 401);
  await errorOf(second);
});

test('rate-limit and proxy settings are validated', () => {
  assert.deepEqual(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 192.168.1.7,::1,fd00::/8' }).trustProxy, ['10.0.0.0/8', '192.168.1.7', '::1', 'fd00::/8']);
  for (const bad of ['10.0.0.0/33', 'proxy.example', '10.1', '1.2.3.4/8/1']) {
    assert.throws(() => loadConfig({ TRUST_PROXY: bad }), /TRUST_PROXY/, bad);
  }
  assert.throws(() => loadConfig({ RATE_LIMIT_PER_TOKEN: '0' }), /RATE_LIMIT_PER_TOKEN/);
  assert.throws(() => loadConfig({ RATE_LIMIT: 'maybe' }), /RATE_LIMIT/);
  assert.equal(loadConfig({ RATE_LIMIT: 'off' }).rateLimit, false);
  assert.equal(loadConfig({}).rateLimitPerToken, 60_000);
});
