// JWTs verified with the identity provider's JWKS, fetched from a real HTTP server on 127.0.0.1: the key set
// is fetched once and cached, an unknown kid causes one refetch (key rotation) but a flood of them does not
// hammer the IdP, and a key set that is down, failing, hanging or too large gives 401 quickly, never a 500.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Config } from '../../src/config.js';
import { startApp } from '../helpers/app.js';
import { testClock } from '../helpers/clock.js';
import { AUDIENCE, ISSUER, mint, signingKey, startJwksServer, unsignedToken, type JwksServer } from '../helpers/jwt-issuer.js';
import { assertInvalidToken, listPlants, postWith } from '../helpers/requests.js';
import { storedPlant } from '../helpers/stored-plant.js';

function jwksConfig(jwks: JwksServer, more: Partial<Config> = {}): Partial<Config> {
  return { jwtJwksUrl: jwks.url, jwtIssuer: ISSUER, jwtAudience: [AUDIENCE], jwtJwksTimeoutMs: 1_000, jwtJwksCooldownMs: 30_000, ...more };
}

test('an RS256 token signed by a key of the JWKS is accepted; the key set is fetched once and cached', async (t) => {
  const key = await signingKey('RS256', 'k1');
  const jwks = await startJwksServer(t, [key.jwk]);
  const s = await startApp(t, { config: jwksConfig(jwks) });
  assert.equal(jwks.fetches(), 0, 'the key set is fetched on first use, not before');

  const token = await mint(key, { claims: { scope: 'plants:read plants:write' } });
  const created = await postWith(s.url, token, 1);
  assert.equal(created.status, 200, await created.text());
  assert.equal((await listPlants(s.url, token)).status, 200);
  const other = await mint(key, { subject: 'user-2', claims: { scope: 'plants:read' } });
  assert.equal((await listPlants(s.url, other)).status, 200);
  assert.equal(jwks.fetches(), 1);
  // Opaque tokens keep working next to JWTs.
  assert.equal((await listPlants(s.url, s.token.read)).status, 200);
});

test('a token signed by another key under a known kid is refused (bad signature)', async (t) => {
  const key = await signingKey('RS256', 'k1');
  const impostor = await signingKey('RS256', 'k1');
  const jwks = await startJwksServer(t, [key.jwk]);
  const s = await startApp(t, { config: jwksConfig(jwks) });
  const forged = await mint(impostor, { claims: { scope: 'plants:write' } });
  await assertInvalidToken(await postWith(s.url, forged, 1), /bad signature/, forged);
  assert.equal(await storedPlant(s.store, 1n), undefined);
});

test('an unknown kid triggers one JWKS refetch: a rotated-in key works, a flood of unknown kids does not hammer the IdP', async (t) => {
  const old = await signingKey('RS256', 'old');
  const next = await signingKey('ES256', 'new');
  // Minted up front, so that the flood below fits well inside the cooldown.
  const strangers = await Promise.all(
    Array.from({ length: 20 }, async (_, i) => mint(await signingKey('ES256', `stranger-${i}`), { claims: { scope: 'plants:read' } })),
  );
  const jwks = await startJwksServer(t, [old.jwk]);
  const clock = testClock();
  const s = await startApp(t, { config: jwksConfig(jwks, { jwtJwksCooldownMs: 1_000 }), clock });

  assert.equal((await listPlants(s.url, await mint(old, { claims: { scope: 'plants:read' } }))).status, 200);
  assert.equal(jwks.fetches(), 1);

  // The IdP rotates: the new key is published, tokens start carrying its kid.
  jwks.setKeys([next.jwk]);
  clock.advance(1_100);
  const rotated = await mint(next, { claims: { scope: 'plants:read' } });
  assert.equal((await listPlants(s.url, rotated)).status, 200);
  assert.equal(jwks.fetches(), 2, 'the unknown kid caused exactly one refetch');

  // Within the cooldown, unknown kids are refused without asking the IdP again.
  const answers = await Promise.all(strangers.map((tok) => listPlants(s.url, tok)));
  for (const [i, res] of answers.entries()) await assertInvalidToken(res, /no known key matches it/, strangers[i]!);
  assert.equal(jwks.fetches(), 2, 'a flood of unknown kids fetched the key set again');

  // The retired key is gone from the set the service now holds (another subject: a token the cache never saw).
  const retired = await mint(old, { subject: 'user-2', claims: { scope: 'plants:read' } });
  await assertInvalidToken(await listPlants(s.url, retired), /no known key/, retired);
  assert.equal((await listPlants(s.url, rotated)).status, 200);
  assert.ok(jwks.fetches() <= 3, `fetches: ${jwks.fetches()}`);
});

test('alg none is refused, also with the kid of a trusted key', async (t) => {
  const key = await signingKey('RS256', 'k1');
  const jwks = await startJwksServer(t, [key.jwk]);
  const s = await startApp(t, { config: jwksConfig(jwks) });
  const now = Math.floor(Date.now() / 1000);
  const claims = { iss: ISSUER, aud: AUDIENCE, sub: 'mallory', exp: now + 300, scope: 'plants:write' };
  for (const token of [unsignedToken(claims), unsignedToken(claims, { kid: 'k1' })]) {
    await assertInvalidToken(await postWith(s.url, token, 1), /not valid/, token);
  }
  assert.equal(await s.store.countPlants(), 0);
});

test('alg confusion: an HS256 token keyed with the public key of the JWKS is refused', async (t) => {
  const key = await signingKey('RS256', 'k1');
  const jwks = await startJwksServer(t, [key.jwk]);
  const s = await startApp(t, { config: jwksConfig(jwks) });
  for (const secret of [key.pem, JSON.stringify(key.jwk), key.jwk.n!]) {
    const token = await mint({ secret, alg: 'HS256', kid: 'k1' }, { claims: { scope: 'plants:write' } });
    await assertInvalidToken(await postWith(s.url, token, 1), /algorithm is not accepted/, token);
  }
  assert.equal(await s.store.countPlants(), 0);
});

test('a JWKS server that is down, failing, hanging or too large gives a quick 401, never a 500 or a hang', async (t) => {
  const key = await signingKey('RS256', 'k1');
  const token = await mint(key, { claims: { scope: 'plants:read' } });

  // Down: nothing listens on the port any more.
  const down = await startJwksServer(t, [key.jwk]);
  await down.close();
  const s1 = await startApp(t, { config: jwksConfig(down) });
  let started = Date.now();
  await assertInvalidToken(await listPlants(s1.url, token), /keys are unavailable/, token);
  assert.ok(Date.now() - started < 2_000, `took ${Date.now() - started} ms`);

  // Failing (500), hanging (no answer: the fetch deadline applies), too large (over the size bound).
  for (const mode of ['error', 'hang', 'huge'] as const) {
    const jwks = await startJwksServer(t, [key.jwk]);
    jwks.setMode(mode);
    const clock = testClock();
    const s = await startApp(t, { config: jwksConfig(jwks, { jwtJwksTimeoutMs: 500 }), clock });
    started = Date.now();
    await assertInvalidToken(await listPlants(s.url, token), /keys are unavailable/, token);
    assert.ok(Date.now() - started < 2_000, `${mode}: took ${Date.now() - started} ms`);
    assert.equal(jwks.fetches(), 1, mode);
    // Right after a failure the IdP is not asked again on every request.
    await assertInvalidToken(await listPlants(s.url, token), /keys are unavailable/, token);
    assert.equal(jwks.fetches(), 1, `${mode}: refetched at once after a failure`);
    // Once it recovers, tokens work again (after the short pause that follows a failure).
    jwks.setMode('ok');
    clock.advance(1_000);
    await assertInvalidToken(await listPlants(s.url, token), /keys are unavailable/, token);
    assert.equal(jwks.fetches(), 1, `${mode}: refetched before the pause after a failure ended`);
    clock.advance(1_100);
    assert.equal((await listPlants(s.url, token)).status, 200, mode);
  }
});

test('a token without kid is checked against every fitting key of the set (IdPs that omit kid)', async (t) => {
  const [a, b] = [await signingKey('RS256', 'a'), await signingKey('RS256', 'b')];
  const strip = (jwk: typeof a.jwk) => ({ ...jwk, kid: undefined });
  const jwks = await startJwksServer(t, [strip(a.jwk), strip(b.jwk)]);
  const s = await startApp(t, { config: jwksConfig(jwks) });
  for (const key of [a, b]) {
    assert.equal((await listPlants(s.url, await mint({ ...key, kid: '' }, { claims: { scope: 'plants:read' } }))).status, 200, key.kid);
  }
  const other = await mint({ ...(await signingKey('RS256', 'c')), kid: '' }, { claims: { scope: 'plants:read' } });
  await assertInvalidToken(await listPlants(s.url, other), /bad signature/, other);
});
