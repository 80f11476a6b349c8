// While the IdP is unreachable, the keys it served last keep verifying tokens once the cached set is due
// for a refresh; a key it never served still does not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createJwtVerifier } from '../../src/auth/jwt-verifier.js';
import { testClock } from '../helpers/clock.js';
import { mint, signingKey, startJwksServer } from '../helpers/jwt-issuer.js';

test('an outdated key set is used while the JWKS server is down; its keys still verify, others do not', async (t) => {
  const key = await signingKey('ES256', 'k1');
  const jwks = await startJwksServer(t, [key.jwk]);
  const errors: string[] = [];
  const clock = testClock();
  const verifier = createJwtVerifier({
    clock,
    // Ages far above the real time the test takes: the clock is real time plus what the test adds, so a slow
    // machine must not age the set by itself.
    key: { kind: 'jwks', url: jwks.url, timeoutMs: 500, cooldownMs: 30_000, maxAgeMs: 60_000 },
    clockSkewMs: 0,
    cacheTtlMs: 0,
    onJwksError: (err) => errors.push(err.message),
  });
  const token = await mint(key, { claims: { scope: 'plants:read' } });
  const first = await verifier.verify(token);
  assert.ok(first.ok);
  assert.deepEqual(first.token.scopes, ['plants:read']);
  // The id is a hash of iss and sub: the same for the same subject, never the token.
  assert.match(first.token.id, /^jwt_[A-Za-z0-9_-]{22}$/);
  const again = await verifier.verify(await mint(key, { claims: { scope: 'plants:write' } }));
  assert.ok(again.ok);
  assert.equal(again.token.id, first.token.id);
  assert.equal(jwks.fetches(), 1);

  await jwks.close();
  clock.advance(61_000);
  // The set is older than maxAge: a refresh is tried, fails, and the last keys answer.
  const stale = await verifier.verify(await mint(key, { subject: 'user-2', claims: { scope: 'plants:read' } }));
  assert.ok(stale.ok, JSON.stringify(stale));
  assert.notEqual(stale.token.id, first.token.id);
  assert.equal(errors.length, 1, errors.join('\n'));
  assert.match(errors[0]!, /ECONNREFUSED/);
  const stranger = await verifier.verify(await mint(await signingKey('ES256', 'k2'), { claims: { scope: 'plants:read' } }));
  assert.deepEqual(stranger, { ok: false, reason: 'unknown', description: 'not valid: no known key matches it' });
});
