// Token secrets are stored only as SHA-256 hashes: the database files never hold the secret itself.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli, startApp, tempDir } from '../helpers/app.js';
import { sha256 } from '../helpers/secrets.js';


/** Every byte SQLite keeps for the database: main file, write-ahead log and shared-memory index. */
function databaseBytes(file: string): Buffer {
  const parts = [file, `${file}-wal`, `${file}-shm`, `${file}-journal`].filter(existsSync).map((f) => readFileSync(f));
  assert.ok(parts.length > 0, `no database at ${file}`);
  return Buffer.concat(parts);
}

function assertOnlyHashStored(bytes: Buffer, secret: string): void {
  assert.match(secret, /^pst_[A-Za-z0-9_-]{43}$/);
  const hex = sha256(secret);
  assert.ok(bytes.includes(hex), 'the SHA-256 hex of the secret is not in the database: the check below would prove nothing');
  for (const form of [secret, secret.slice('pst_'.length), secret.slice(4, 24), Buffer.from(secret.slice(4), 'base64url').toString('hex')]) {
    assert.equal(bytes.includes(form), false, `the database holds the secret (as ${JSON.stringify(form.slice(0, 12))}...)`);
  }
  assert.equal(bytes.includes(Buffer.from(secret.slice(4), 'base64url')), false, 'the database holds the raw secret bytes');
}

test('a token made with the CLI is stored as its SHA-256 hash only', async (t) => {
  const file = join(tempDir(t), 'x.db');
  const env = { DATABASE_URL: `sqlite:${file}` };
  assert.equal((await runCli(['migrate'], env)).code, 0);
  const res = await runCli(['token', 'create', '--scopes', 'plants:read,plants:write', '--name', 'ci'], env);
  assert.equal(res.code, 0, res.stderr);
  const secret = res.stdout.trimEnd().split('\n').at(-1)!;
  assertOnlyHashStored(databaseBytes(file), secret);
});

test('tokens made by a running service are stored as hashes only, in the live database and its WAL', async (t) => {
  const s = await startApp(t);
  const file = s.databaseUrl.slice('sqlite:'.length);
  const { secret } = await s.tokens.create({ name: 'live', scopes: ['plants:write'], expiresAt: new Date(Date.now() + 86_400_000) });
  // Use it, so last-used bookkeeping has run too.
  const ok = await s.postPlant({ id: 1, name: 'fern' }, { authorization: `Bearer ${secret}` });
  assert.equal(ok.status, 200);
  await s.tokens.flushLastUsed();
  const bytes = databaseBytes(file);
  for (const sec of [secret, s.token.all, s.token.read, s.token.write]) assertOnlyHashStored(bytes, sec);
});
