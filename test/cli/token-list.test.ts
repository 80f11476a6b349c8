// `plant-store token list [--json]`: shows id, name, scopes and times of every token, never a secret.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { createTokenService } from '../../src/auth/token-service.js';
import type { Scope } from '../../src/auth/tokens.js';
import { openStore } from '../../src/storage/open-store.js';
import { runCli, spawnServer, tempDir, migratedDatabaseUrl } from '../helpers/app.js';
import { sha256 } from '../helpers/secrets.js';


interface Row {
  id: string;
  name: string;
  scopes: string;
  created: string;
  lastUsed: string | null;
  expires: string | null;
  revoked: string | null;
}

async function create(env: Record<string, string>, args: string[]): Promise<{ id: string; secret: string }> {
  const res = await runCli(['token', 'create', ...args], env);
  assert.equal(res.code, 0, res.stderr);
  return { id: /tok_[A-Za-z0-9_-]+/.exec(res.stdout)![0], secret: res.stdout.trimEnd().split('\n').at(-1)! };
}

function assertNoSecrets(output: string, secrets: string[]): void {
  assert.doesNotMatch(output, /pst_/, 'a listing shows something token-shaped');
  for (const secret of secrets) {
    assert.equal(output.includes(secret), false, 'a listing shows a secret');
    assert.equal(output.includes(secret.slice(4)), false, 'a listing shows a secret without its prefix');
    assert.equal(output.includes(sha256(secret)), false, 'a listing shows a secret hash');
  }
}

test('token list on an empty database says there are none; --json gives an empty array', async (t) => {
  const env = { DATABASE_URL: (await migratedDatabaseUrl(t)) };
  const text = await runCli(['token', 'list'], env);
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, /no tokens/i);
  const json = await runCli(['token', 'list', '--json'], env);
  assert.equal(json.code, 0, json.stderr);
  assert.deepEqual(JSON.parse(json.stdout), []);
});

test('token list shows id, name, scopes, expiry and revocation of each token and never a secret', async (t) => {
  const env = { DATABASE_URL: (await migratedDatabaseUrl(t)) };
  const ci = await create(env, ['--scopes', 'plants:read,plants:write', '--name', 'ci']);
  // The others are seeded directly, to keep the test quick.
  const { store } = await openStore(env.DATABASE_URL);
  const service = createTokenService(store);
  const seeded = async (name: string, scopes: Scope[], expiresAt: Date | null = null) => {
    const { token, secret } = await service.create({ name, scopes, expiresAt });
    return { id: token.id, secret };
  };
  const reader = await seeded('reader bot', ['plants:read']);
  const temp = await seeded('temp', ['plants:write'], new Date('2999-01-01T00:00:00Z'));
  assert.equal(await service.revoke(reader.id), true);
  await store.close();
  const secrets = [ci.secret, reader.secret, temp.secret];

  const [text, json] = await Promise.all([runCli(['token', 'list'], env), runCli(['token', 'list', '--json'], env)]);
  assert.equal(text.code, 0, text.stderr);
  assert.equal(json.code, 0, json.stderr);
  assertNoSecrets(text.stdout + text.stderr, secrets);
  assertNoSecrets(json.stdout + json.stderr, secrets);

  // The table: a header and one line per token with its id, name and scopes.
  const lines = text.stdout.trimEnd().split('\n');
  assert.equal(lines.length, 4, text.stdout);
  assert.match(lines[0]!, /ID\s+NAME\s+SCOPES/);
  for (const [token, name, scopes] of [[ci, 'ci', 'plants:read plants:write'], [reader, 'reader bot', 'plants:read'], [temp, 'temp', 'plants:write']] as const) {
    const line = lines.find((l) => l.startsWith(token.id));
    assert.ok(line, `${token.id} is not listed`);
    assert.ok(line.includes(`  ${name}  `), line);
    assert.ok(line.includes(scopes), line);
  }
  assert.match(lines.find((l) => l.startsWith(temp.id))!, /2999-01-01T00:00:00\.000Z/);

  // JSON: the same facts, machine-readable, with no secret-bearing field.
  const rows = JSON.parse(json.stdout) as Row[];
  assert.equal(rows.length, 3);
  for (const row of rows) {
    assert.deepEqual(Object.keys(row).sort(), ['created', 'expires', 'id', 'lastUsed', 'name', 'revoked', 'scopes']);
    assert.ok(!Number.isNaN(Date.parse(row.created)));
  }
  const byId = new Map(rows.map((r) => [r.id, r]));
  assert.deepEqual(
    { name: byId.get(ci.id)?.name, scopes: byId.get(ci.id)?.scopes, expires: byId.get(ci.id)?.expires, revoked: byId.get(ci.id)?.revoked },
    { name: 'ci', scopes: 'plants:read plants:write', expires: null, revoked: null },
  );
  assert.equal(byId.get(temp.id)?.expires, '2999-01-01T00:00:00.000Z');
  assert.ok(!Number.isNaN(Date.parse(byId.get(reader.id)?.revoked ?? 'not revoked')));
});

test('token list takes no arguments other than --json', async (t) => {
  const env = { DATABASE_URL: (await migratedDatabaseUrl(t)) };
  const results = await Promise.all([
    runCli(['token', 'list', 'everything'], env),
    runCli(['token', 'list', '--scopes', 'plants:read'], env),
  ]);
  for (const res of results) {
    assert.equal(res.code, 2, res.stdout + res.stderr);
    assert.ok(res.stderr.length > 0);
  }
});

test('token list shows when a token was last used by the server', async (t) => {
  const env = { DATABASE_URL: (await migratedDatabaseUrl(t)), BOOTSTRAP_TOKEN: 'false' };
  const server = await spawnServer(t, env);
  const [used, idle] = await Promise.all([create(env, ['--scopes', 'plants:write', '--name', 'used']), create(env, ['--scopes', 'plants:write', '--name', 'idle'])]);
  const before = Date.now();
  const res = await fetch(`${server.url}/plants`, {
    method: 'POST',
    headers: { authorization: `Bearer ${used.secret}`, 'content-type': 'application/json' },
    body: '{"id":1,"name":"fern"}',
  });
  assert.equal(res.status, 200);
  // Last-used times are written in batches; a graceful stop writes the pending ones.
  server.proc.kill('SIGTERM');
  assert.equal(await server.exited, 0);
  const list = await runCli(['token', 'list', '--json'], env);
  const rows = new Map((JSON.parse(list.stdout) as Row[]).map((r) => [r.id, r]));
  const lastUsed = Date.parse(rows.get(used.id)?.lastUsed ?? 'never');
  assert.ok(lastUsed >= before - 1_000 && lastUsed <= Date.now(), String(rows.get(used.id)?.lastUsed));
  assert.equal(rows.get(idle.id)?.lastUsed, null);
});
