// JWTs never reach the logs: the whole output of a real `plant-store serve`, after valid, refused and
// unverifiable JWTs (the key set server stopped half way), holds no token nor any part of one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { spawnServer, tempDir } from '../helpers/app.js';
import { AUDIENCE, ISSUER, mint, signingKey, startJwksServer, unsignedToken } from '../helpers/jwt-issuer.js';
import { listPlants, postWith } from '../helpers/requests.js';
import { eventually } from '../helpers/sleep.js';

test('no JWT, nor any segment of one, appears in the logs of a server that verified JWTs', async (t) => {
  const key = await signingKey('RS256', 'k1');
  const jwks = await startJwksServer(t, [key.jwk]);
  const server = await spawnServer(t, {
    DATABASE_URL: `sqlite:${join(tempDir(t), 'x.db')}`,
    LOG_LEVEL: 'trace',
    BOOTSTRAP_TOKEN: 'false',
    JWT_JWKS_URL: jwks.url,
    JWT_ISSUER: ISSUER,
    JWT_AUDIENCE: AUDIENCE,
    JWT_JWKS_TIMEOUT_MS: '500',
    JWT_JWKS_COOLDOWN_MS: '1000',
  });
  const now = Math.floor(Date.now() / 1000);
  const tokens = {
    valid: await mint(key, { subject: 'alice@example.com', claims: { scope: 'plants:read plants:write' } }),
    readOnly: await mint(key, { claims: { scope: 'plants:read' } }),
    expired: await mint(key, { expiresIn: -3600, claims: { scope: 'plants:write' } }),
    audience: await mint(key, { audience: 'elsewhere', claims: { scope: 'plants:write' } }),
    forged: await mint(await signingKey('RS256', 'k1'), { claims: { scope: 'plants:write' } }),
    unknownKid: await mint(await signingKey('RS256', 'k2'), { claims: { scope: 'plants:write' } }),
    none: unsignedToken({ iss: ISSUER, aud: AUDIENCE, sub: 'mallory', exp: now + 60, scope: 'plants:write' }),
    confused: await mint({ secret: key.pem, alg: 'HS256', kid: 'k1' }, { claims: { scope: 'plants:write' } }),
  };
  const statuses: Record<string, number> = {};
  for (const [name, token] of Object.entries(tokens)) {
    const res = await postWith(server.url, token, Object.keys(statuses).length + 1);
    await res.arrayBuffer();
    statuses[name] = res.status;
  }
  assert.deepEqual(statuses, { valid: 200, readOnly: 403, expired: 401, audience: 401, forged: 401, unknownKid: 401, none: 401, confused: 401 });

  // The IdP goes away; a token with a new kid cannot be checked, and the failure is logged: the first try after
  // the cooldown since the last fetch makes the server fetch the key set again.
  await jwks.close();
  const stranded = await mint(await signingKey('RS256', 'k3'), { claims: { scope: 'plants:read' } });
  const fetchFailed = async () => {
    const res = await listPlants(server.url, stranded);
    assert.equal(res.status, 401);
    await res.arrayBuffer();
    return /could not fetch the JWT key set/.test(server.stdout() + server.stderr());
  };
  await eventually(fetchFailed, 'the failed fetch of the key set logged', 10_000, 100);
  // A token already verified keeps working from the cached key set.
  assert.equal((await listPlants(server.url, tokens.valid)).status, 200);

  server.proc.kill('SIGTERM');
  assert.equal(await server.exited, 0);
  const logs = server.stdout() + server.stderr();
  assert.ok((logs.match(/"request completed"/g) ?? []).length >= Object.keys(tokens).length + 2, logs);
  assert.match(logs, /could not fetch the JWT key set/);
  for (const [name, token] of Object.entries({ ...tokens, stranded })) {
    // Header segments are shared by many tokens and hold no secret, but payloads and signatures must not leak.
    for (const part of token.split('.').slice(1).filter((p) => p.length >= 8)) {
      assert.equal(logs.includes(part), false, `part of the ${name} token is in the logs:\n${logs}`);
      assert.equal(logs.includes(part.slice(0, 24)), false, `a prefix of the ${name} token is in the logs`);
    }
  }
  assert.doesNotMatch(logs, /eyJ[A-Za-z0-9_-]{10,}\.eyJ/, 'something JWT-shaped is in the logs');
  assert.ok(!logs.includes('alice@example.com'), 'a subject is in the logs');
  for (const line of logs.split('\n').filter(Boolean)) assert.doesNotThrow(() => JSON.parse(line), line);
});
