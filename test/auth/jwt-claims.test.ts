// The claims of a JWT: exp and nbf with a clock skew, iss and aud when configured, a subject, and scopes
// from `scope` or `scp` (only the service's own). Failed JWTs count toward the per-address throttle.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Config } from '../../src/config.js';
import { startApp } from '../helpers/app.js';
import { testClock } from '../helpers/clock.js';
import { AUDIENCE, ISSUER, mint } from '../helpers/jwt-issuer.js';
import { assertInvalidToken, listPlants, postWith } from '../helpers/requests.js';

const SECRET = 'claims-test-secret-0123456789abcdef';
const key = { secret: SECRET };
const config: Partial<Config> = { jwtHs256Secret: SECRET, jwtIssuer: ISSUER, jwtAudience: [AUDIENCE], jwtClockSkewMs: 30_000 };

test('exp and nbf are checked with the configured clock skew', async (t) => {
  const s = await startApp(t, { config });
  const read = { scope: 'plants:read' };
  const expired = await mint(key, { expiresIn: -60, claims: read });
  await assertInvalidToken(await listPlants(s.url, expired), /expired/, expired);
  // 10 s past exp is inside the 30 s skew.
  assert.equal((await listPlants(s.url, await mint(key, { expiresIn: -10, claims: read }))).status, 200);
  const early = await mint(key, { notBefore: 120, claims: read });
  await assertInvalidToken(await listPlants(s.url, early), /not valid yet/, early);
  assert.equal((await listPlants(s.url, await mint(key, { notBefore: 10, claims: read }))).status, 200);
});

test('exp and nbf are read against the service clock, skew included', async (t) => {
  const clock = testClock();
  const s = await startApp(t, { config: { ...config, tokenCacheTtlMs: 0 }, clock });
  const read = { scope: 'plants:read' };
  const early = await mint(key, { notBefore: 120, expiresIn: 600, claims: read });
  await assertInvalidToken(await listPlants(s.url, early), /not valid yet/, early);
  clock.advance(100_000);
  assert.equal((await listPlants(s.url, early)).status, 200, 'inside the 30 s skew before nbf');
  clock.advance(520_000);
  assert.equal((await listPlants(s.url, early)).status, 200, 'inside the 30 s skew after exp');
  clock.advance(40_000);
  await assertInvalidToken(await listPlants(s.url, early), /expired/, early);
});

test('a token for another audience or from another issuer, or without exp or sub, is refused', async (t) => {
  const s = await startApp(t, { config });
  const read = { scope: 'plants:read' };
  const cases: [string, RegExp][] = [
    [await mint(key, { audience: 'other-api', claims: read }), /wrong audience/],
    [await mint(key, { audience: null, claims: read }), /wrong audience|aud claim/],
    [await mint(key, { issuer: 'https://evil.test/', claims: read }), /wrong issuer/],
    [await mint(key, { issuer: null, claims: read }), /wrong issuer|iss claim/],
    [await mint(key, { subject: null, claims: read }), /the sub claim is missing or wrong/],
    [await mint(key, { expiresIn: null, claims: read }), /the exp claim is missing or wrong/],
    [await mint(key, { claims: { scope: ['plants:read', 42] } }), /scope claim is not a string or a list of strings/],
  ];
  for (const [token, why] of cases) await assertInvalidToken(await listPlants(s.url, token), why, token);
  // Several audiences in the token: one of them is ours.
  assert.equal((await listPlants(s.url, await mint(key, { audience: ['billing', AUDIENCE], claims: read }))).status, 200);
});

test('scopes come from scope (space-separated) or scp (list or string); unknown ones are ignored; missing ones give 403', async (t) => {
  const s = await startApp(t, { config });
  const insufficient = async (res: Response, needed: string) => {
    assert.equal(res.status, 403, await res.clone().text());
    assert.match(res.headers.get('www-authenticate') ?? '', new RegExp(`error="insufficient_scope", scope="${needed}"`));
    const body = (await res.json()) as { error: number };
    assert.equal(body.error, 403);
  };
  const readOnly = await mint(key, { claims: { scope: 'openid admin plants:read' } });
  assert.equal((await listPlants(s.url, readOnly)).status, 200);
  await insufficient(await postWith(s.url, readOnly, 1), 'plants:write');

  const scpList = await mint(key, { claims: { scp: ['plants:write', 'superuser'] } });
  assert.equal((await postWith(s.url, scpList, 2)).status, 200);
  await insufficient(await listPlants(s.url, scpList), 'plants:read');
  const scpString = await mint(key, { claims: { scp: 'plants:read plants:write' } });
  assert.equal((await listPlants(s.url, scpString)).status, 200);

  const none = await mint(key);
  await insufficient(await listPlants(s.url, none), 'plants:read');
  // Look-alikes are not scopes: case and separators matter.
  const lookalike = await mint(key, { claims: { scope: 'PLANTS:READ,plants:read:all plants:write' } });
  await insufficient(await listPlants(s.url, lookalike), 'plants:read');
  assert.equal((await postWith(s.url, lookalike, 3)).status, 200);
});

test('a cached verified token stops working at its exp', async (t) => {
  const clock = testClock();
  const s = await startApp(t, { config: { ...config, jwtClockSkewMs: 0, tokenCacheTtlMs: 4_000 }, clock });
  const token = await mint(key, { expiresIn: 2, claims: { scope: 'plants:read' } });
  assert.equal((await listPlants(s.url, token)).status, 200);
  const exp = (Math.floor(Date.now() / 1000) + 2) * 1000;
  clock.advance(Math.max(0, exp - clock.now()) + 1_100);
  await assertInvalidToken(await listPlants(s.url, token), /expired/, token);
});

test('failed JWTs count toward the per-address failure throttle', async (t) => {
  const s = await startApp(t, { config: { ...config, authFailuresPerMinute: 3 } });
  const good = await mint(key, { claims: { scope: 'plants:read' } });
  const bad = await mint({ secret: SECRET + '-wrong' }, { claims: { scope: 'plants:read' } });
  for (let i = 0; i < 3; i++) await assertInvalidToken(await listPlants(s.url, bad), /bad signature/, bad);
  const throttled = await listPlants(s.url, bad);
  assert.equal(throttled.status, 429);
  assert.ok(Number(throttled.headers.get('retry-after')) > 0);
  // A valid JWT still passes from that address.
  assert.equal((await listPlants(s.url, good)).status, 200);
});

test('the metrics count JWT failures by reason', async (t) => {
  const s = await startApp(t, { config: { ...config, jwtJwksUrl: '', jwtHs256Secret: SECRET } });
  const metricsToken = (await s.tokens.create({ name: 'prom', scopes: ['metrics:read'] })).secret;
  await listPlants(s.url, await mint(key, { expiresIn: -120, claims: { scope: 'plants:read' } }));
  await listPlants(s.url, await mint(key, { audience: 'x', claims: { scope: 'plants:read' } }));
  const text = await (await fetch(`${s.url}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } })).text();
  assert.match(text, /plant_store_auth_failures_total\{reason="expired"\} 1/);
  assert.match(text, /plant_store_auth_failures_total\{reason="unknown"\} 1/);
});
