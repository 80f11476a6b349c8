// Expired and revoked tokens are refused with 401 error="invalid_token", like tokens never issued.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startApp } from '../helpers/app.js';
import { testClock } from '../helpers/clock.js';
import { assertInvalidToken, postWith } from '../helpers/requests.js';
import { storedPlant } from '../helpers/stored-plant.js';

test('a token whose expiry has passed gets 401 invalid_token', async (t) => {
  const s = await startApp(t);
  const { secret } = await s.tokens.create({ name: 'old', scopes: ['plants:read', 'plants:write'], expiresAt: new Date(Date.now() - 60_000) });
  await assertInvalidToken(await postWith(s, secret, 1), /expired/);
  assert.equal(await storedPlant(s.store, 1n), undefined);
});

test('a token with a future expiry works until then, and stops at its expiry even while cached', async (t) => {
  const clock = testClock();
  const s = await startApp(t, { config: { tokenCacheTtlMs: 5_000 }, clock });
  const expiresAt = new Date(clock.now() + 1_500);
  const { secret } = await s.tokens.create({ name: 'short', scopes: ['plants:write'], expiresAt });
  assert.equal((await postWith(s, secret, 1)).status, 200);
  clock.advance(1_000);
  assert.equal((await postWith(s, secret, 3)).status, 200, 'still works just before its expiry');
  clock.advance(expiresAt.getTime() - clock.now() + 50);
  // The verified token sits in the 5 s cache; its expiry still applies.
  await assertInvalidToken(await postWith(s, secret, 2), /expired/);
  assert.equal(await storedPlant(s.store, 2n), undefined);
});

test('a token revoked through the service is refused at once, and other tokens keep working', async (t) => {
  const s = await startApp(t, { config: { tokenCacheTtlMs: 5_000 } });
  const { token, secret } = await s.tokens.create({ name: 'ci', scopes: ['plants:write'] });
  assert.equal((await postWith(s, secret, 1)).status, 200);
  assert.equal(await s.tokens.revoke(token.id), true);
  await assertInvalidToken(await postWith(s, secret, 2), /revoked/);
  assert.equal(await storedPlant(s.store, 2n), undefined);
  // Revoking one token does not disturb the others.
  assert.equal((await postWith(s, s.token.write, 3)).status, 200);
  // Revoking twice reports that nothing was active.
  assert.equal(await s.tokens.revoke(token.id), false);
});

test('a revoked token stays refused, also after its cache entry would have expired', async (t) => {
  const clock = testClock();
  const s = await startApp(t, { config: { tokenCacheTtlMs: 200 }, clock });
  const { token, secret } = await s.tokens.create({ name: 'ci', scopes: ['plants:write'] });
  await s.tokens.revoke(token.id);
  for (let i = 0; i < 3; i++) {
    await assertInvalidToken(await postWith(s, secret, 10 + i), /revoked/);
    clock.advance(250);
  }
  assert.equal(await s.store.countPlants(), 0);
});
