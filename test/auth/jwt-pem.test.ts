// JWTs verified with a configured PEM public key: only the algorithms that fit the key are accepted, so an
// HS256 token keyed with the public key itself (algorithm confusion) and tokens of other algorithms fail.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../../src/config.js';
import { startApp, tempDir } from '../helpers/app.js';
import { AUDIENCE, ISSUER, mint, signingKey } from '../helpers/jwt-issuer.js';
import { assertInvalidToken, listPlants, postWith } from '../helpers/requests.js';

test('an ES256 token signed by the configured PEM key is accepted; another key or another algorithm is not', async (t) => {
  const key = await signingKey('ES256', 'ignored');
  const s = await startApp(t, { config: { jwtPublicKey: key.pem, jwtIssuer: ISSUER, jwtAudience: [AUDIENCE] } });
  const token = await mint(key, { claims: { scope: 'plants:write plants:read' } });
  assert.equal((await postWith(s.url, token, 1)).status, 200);
  assert.equal((await listPlants(s.url, token)).status, 200);
  // With a single key, the kid does not matter (none at all works too).
  assert.equal((await listPlants(s.url, await mint({ ...key, kid: '' }, { claims: { scope: 'plants:read' } }))).status, 200);

  const other = await mint(await signingKey('ES256', 'ignored'), { claims: { scope: 'plants:write' } });
  await assertInvalidToken(await postWith(s.url, other, 2), /bad signature/, other);
  const rsa = await mint(await signingKey('RS256', 'x'), { claims: { scope: 'plants:write' } });
  await assertInvalidToken(await postWith(s.url, rsa, 3), /algorithm is not accepted/, rsa);
  assert.equal(await s.store.countPlants(), 1);
});

test('alg confusion: an HS256 token keyed with the configured RSA public key (PEM) is refused', async (t) => {
  const key = await signingKey('RS256', 'k');
  const s = await startApp(t, { config: { jwtPublicKey: key.pem } });
  assert.equal((await postWith(s.url, await mint(key, { claims: { scope: 'plants:write' } }), 1)).status, 200);
  for (const secret of [key.pem, key.pem.trim(), key.pem.replace(/\n/g, '\r\n')]) {
    const forged = await mint({ secret, alg: 'HS256' }, { claims: { scope: 'plants:write' } });
    await assertInvalidToken(await postWith(s.url, forged, 2), /algorithm is not accepted/, forged);
  }
  assert.equal(await s.store.countPlants(), 1);
});

test('JWT_PUBLIC_KEY may name a PEM file; an Ed25519 key then verifies EdDSA tokens', async (t) => {
  const key = await signingKey('EdDSA', 'ed');
  const file = join(tempDir(t), 'idp.pem');
  writeFileSync(file, key.pem);
  const fromEnv = loadConfig({ JWT_PUBLIC_KEY: file, JWT_AUDIENCE: `${AUDIENCE}, other` });
  assert.equal(fromEnv.jwtPublicKey, key.pem.trim());
  assert.deepEqual(fromEnv.jwtAudience, [AUDIENCE, 'other']);
  const s = await startApp(t, { config: { jwtPublicKey: fromEnv.jwtPublicKey, jwtAudience: fromEnv.jwtAudience } });
  assert.equal((await listPlants(s.url, await mint(key, { claims: { scope: 'plants:read' } }))).status, 200);
  assert.equal((await listPlants(s.url, await mint(key, { audience: 'other', claims: { scope: 'plants:read' } }))).status, 200);
  const elsewhere = await mint(key, { audience: 'another-api', claims: { scope: 'plants:read' } });
  await assertInvalidToken(await listPlants(s.url, elsewhere), /wrong audience/, elsewhere);
});

test('JWT_PUBLIC_KEY inline with \\n escapes works; a private key, a short RSA key or junk is refused', async () => {
  const key = await signingKey('RS256', 'k');
  assert.equal(loadConfig({ JWT_PUBLIC_KEY: key.pem.trim().replace(/\n/g, '\\n') }).jwtPublicKey, key.pem.trim());
  const { generateKeyPairSync } = await import('node:crypto');
  const weak = generateKeyPairSync('rsa', { modulusLength: 1024 });
  const cases: [string, RegExp][] = [
    [weak.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, /private key/],
    [weak.publicKey.export({ type: 'spki', format: 'pem' }) as string, /at least 2048 bits/],
    ['-----BEGIN PUBLIC KEY-----\nnot base64\n-----END PUBLIC KEY-----', /not a PEM public key/],
    ['/no/such/file.pem', /neither a PEM key nor a readable file: ENOENT/],
  ];
  for (const [value, why] of cases) assert.throws(() => loadConfig({ JWT_PUBLIC_KEY: value }), (err: Error) => /JWT_PUBLIC_KEY: /.test(err.message) && why.test(err.message));
});
