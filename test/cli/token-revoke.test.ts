// `plant-store token revoke ID`: exit 0 and the token is refused; unknown or already revoked ids exit 1.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { createTokenService } from '../../src/auth/token-service.js';
import { openStore } from '../../src/storage/open-store.js';
import { errorOf, runCli, startApp, tempDir, freshDatabaseUrl } from '../helpers/app.js';

/** Seeds tokens directly in the database (the command under test here is revoke, not create). */
async function create(env: Record<string, string>, name: string): Promise<{ id: string; secret: string }> {
  const { store } = await openStore(env.DATABASE_URL!);
  try {
    const { token, secret } = await createTokenService(store).create({ name, scopes: ['plants:write'] });
    return { id: token.id, secret };
  } finally {
    await store.close();
  }
}

test('token revoke ID exits 0, the list shows it revoked and a server refuses it; other tokens keep working', async (t) => {
  const env = { DATABASE_URL: (await freshDatabaseUrl(t)) };
  const doomed = await create(env, 'doomed');
  const kept = await create(env, 'kept');
  const res = await runCli(['token', 'revoke', doomed.id], env);
  assert.equal(res.code, 0, res.stderr);
  assert.ok(res.stdout.includes(doomed.id));

  const rows = JSON.parse((await runCli(['token', 'list', '--json'], env)).stdout) as Array<{ id: string; revoked: string | null }>;
  assert.ok(rows.find((r) => r.id === doomed.id)?.revoked);
  assert.equal(rows.find((r) => r.id === kept.id)?.revoked, null);

  const s = await startApp(t, { databaseUrl: env.DATABASE_URL });
  const refused = await s.postPlant({ id: 1, name: 'fern' }, { authorization: `Bearer ${doomed.secret}` });
  assert.equal(refused.status, 401);
  assert.match(refused.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
  await errorOf(refused);
  assert.equal((await s.postPlant({ id: 1, name: 'fern' }, { authorization: `Bearer ${kept.secret}` })).status, 200);
});

test('revoking an unknown or already revoked id exits 1 with a message on stderr', async (t) => {
  const env = { DATABASE_URL: (await freshDatabaseUrl(t)) };
  const token = await create(env, 'once');
  assert.equal((await runCli(['token', 'revoke', token.id], env)).code, 0);
  const [again, unknown] = await Promise.all([
    runCli(['token', 'revoke', token.id], env),
    runCli(['token', 'revoke', 'tok_doesnotexist'], env),
  ]);
  for (const res of [again, unknown]) {
    assert.equal(res.code, 1, res.stdout + res.stderr);
    assert.match(res.stderr, /no active token/);
  }
  assert.ok(unknown.stderr.includes('tok_doesnotexist'));
});

test('token revoke without exactly one id exits 2 and revokes nothing', async (t) => {
  const env = { DATABASE_URL: (await freshDatabaseUrl(t)) };
  const a = await create(env, 'a');
  const b = await create(env, 'b');
  const results = await Promise.all([
    runCli(['token', 'revoke'], env),
    runCli(['token', 'revoke', a.id, b.id], env),
  ]);
  for (const res of results) {
    assert.equal(res.code, 2, res.stdout + res.stderr);
    assert.ok(res.stderr.length > 0);
  }
  const rows = JSON.parse((await runCli(['token', 'list', '--json'], env)).stdout) as Array<{ revoked: string | null }>;
  assert.deepEqual(rows.map((r) => r.revoked), [null, null]);
});
