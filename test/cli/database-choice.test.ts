// Which database a command uses: every command that touches one names it on stderr, and the token, webhook
// and export commands refuse one that does not exist (saying how to create it) instead of making a new,
// empty one that the server never reads.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { migratedDatabaseUrl, runCli, tempDir, TEST_STORE, freshDatabaseUrl } from '../helpers/app.js';

/** How the CLI names the database of `url` on stderr. */
function named(url: string): string {
  if (url.startsWith('sqlite:')) return `the SQLite database ${url.slice('sqlite:'.length)}`;
  const u = new URL(url);
  return `the PostgreSQL database ${u.hostname}:${u.port || '5432'}${u.pathname}`;
}

/** A database of the store under test that does not exist, and what the refusal must say about it. */
async function missingDatabase(t: Parameters<typeof tempDir>[0]): Promise<{ url: string; says: RegExp[]; exists: () => boolean }> {
  if (TEST_STORE === 'sqlite') {
    const file = join(tempDir(t), 'elsewhere', 'plants.db');
    return { url: `sqlite:${file}`, says: [new RegExp(`There is no SQLite database at ${file.replace(/[.]/g, '\\.')}`), /npx plant-store migrate/], exists: () => existsSync(file) };
  }
  const u = new URL(await freshDatabaseUrl(t));
  u.pathname = `/plantstore_never_created_${process.pid}`;
  return { url: u.toString(), says: [/The PostgreSQL database "plantstore_never_created_\d+" does not exist/, /createdb plantstore_never_created_\d+/, /npx plant-store migrate/], exists: () => false };
}

test('token, webhook and export commands refuse a database that does not exist, say how to create it, and create nothing', async (t) => {
  const missing = await missingDatabase(t);
  const env = { DATABASE_URL: missing.url };
  const commands = [
    ['token', 'create', '--scopes', 'plants:read', '--name', 'ci'],
    ['token', 'list'],
    ['token', 'revoke', 'tok_x'],
    ['webhook', 'add', 'https://1.1.1.1/hook'],
    ['webhook', 'list'],
    ['webhook', 'retry', 'wh_x', 'dlv_x'],
    ['webhook', 'enable', 'wh_x'],
    ['export'],
  ];
  for (const args of commands) {
    const res = await runCli(args, env);
    assert.equal(res.code, 1, `${args.join(' ')}: ${res.stdout}${res.stderr}`);
    for (const says of missing.says) assert.match(res.stderr, says, args.join(' '));
    assert.equal(res.stdout, '', args.join(' '));
    assert.doesNotMatch(res.stdout + res.stderr, /pst_|whsec_/);
  }
  assert.equal(missing.exists(), false, 'a refused command created the database');
});

test('after `migrate` made the database the token commands use it; migrate again has nothing to do', async (t) => {
  // A SQLite file that does not exist yet (migrate creates it), or an empty PostgreSQL database.
  const url = TEST_STORE === 'sqlite' ? `sqlite:${join(tempDir(t), 'new', 'plants.db')}` : await freshDatabaseUrl(t);
  const env = { DATABASE_URL: url };
  const first = await runCli(['migrate'], env);
  assert.equal(first.code, 0, first.stderr);
  assert.match(first.stderr, new RegExp(`^plant-store: Using ${named(url).replace(/[.]/g, '\\.')}`, 'm'));
  if (TEST_STORE === 'sqlite') assert.match(first.stderr, /, which is created now\./);
  assert.match(first.stdout, /^0001 .*: applied$/m);
  const created = await runCli(['token', 'create', '--scopes', 'plants:read', '--name', 'ci'], env);
  assert.equal(created.code, 0, created.stderr);
  const again = await runCli(['migrate'], env);
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stdout, /^0001 .*: already applied$/m);
  assert.doesNotMatch(again.stdout, /already-applied|: applied$/m);
});

test('every command that touches the database names it on stderr, before its output', async (t) => {
  const url = await migratedDatabaseUrl(t);
  const env = { DATABASE_URL: url };
  const input = join(tempDir(t), 'p.jsonl');
  writeFileSync(input, '{"id":1,"name":"fern"}\n');
  const line = `plant-store: Using ${named(url)}.`;
  for (const args of [['migrate'], ['token', 'list'], ['webhook', 'list'], ['import', input], ['export'], ['webhook', 'deliveries', 'wh_x']]) {
    const res = await runCli(args, env);
    assert.equal(res.stderr.split('\n')[0], line, `${args.join(' ')}: ${res.stderr}`);
  }
  // Commands that do not touch it say nothing about it.
  for (const args of [['config'], ['token', '--help'], ['import', '--help']]) {
    assert.doesNotMatch((await runCli(args, env)).stderr, /Using the/, args.join(' '));
  }
});
