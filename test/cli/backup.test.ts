// `plant-store backup FILE` and `restore FILE` on SQLite: a backup taken while a real server commits plants
// holds every plant acknowledged before it started, with tokens, subscriptions and pending deliveries; the
// restored store serves them. Refusals leave both files as they were: an existing backup file, a store in
// use, a store with data (without --force), a file that is not a backup, and a PostgreSQL DATABASE_URL. A
// forced restore moves the version counter past the replaced store's (test/cli/restore-versions.test.ts: why).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { runCli, spawnServer, tempDir } from '../helpers/app.js';
import { postJson } from '../helpers/requests.js';
import { eventually } from '../helpers/sleep.js';

const WRITERS = 4;

/** A SQLite store with a token of every scope (its secret returned), made by the CLI as an operator would. */
async function store(t: TestContext, name = 'store.db'): Promise<{ dir: string; file: string; env: Record<string, string>; secret: string }> {
  const dir = tempDir(t);
  const file = join(dir, name);
  const env = { DATABASE_URL: `sqlite:${file}`, BOOTSTRAP_TOKEN: 'false', WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' };
  assert.equal((await runCli(['migrate'], env)).code, 0);
  const created = await runCli(['token', 'create', '--name', 'ops', '--scopes', 'plants:read,plants:write,webhooks:manage'], env);
  assert.equal(created.code, 0, created.stderr);
  return { dir, file, env, secret: created.stdout.trim().split('\n').at(-1)! };
}

function count(stdout: string, table: string): number {
  const m = new RegExp(`^ {2}${table}: (\\d+)`, 'm').exec(stdout);
  assert.ok(m, `no "${table}" in:\n${stdout}`);
  return Number(m[1]);
}

function rows(file: string, sql: string): unknown[] {
  const db = new Database(file, { readonly: true });
  try {
    return db.prepare(sql).pluck().all();
  } finally {
    db.close();
  }
}

test('a backup under concurrent writes holds every plant acknowledged before it, with tokens, subscriptions and pending deliveries; the restored store serves', async (t) => {
  const s = await store(t);
  const server = await spawnServer(t, s.env);
  // Deliveries to a closed port fail and stay pending, to be retried.
  const sub = await postJson(server.url, s.secret, '/webhooks', { url: 'http://127.0.0.1:1/hooks' });
  assert.equal(sub.status, 201, await sub.clone().text());
  const subscriptionId = ((await sub.json()) as { id: string }).id;

  const acknowledged = new Set<number>();
  for (let id = 1; id <= 200; id++) {
    const res = await postJson(server.url, s.secret, '/plants', { id, name: `seed ${id}` });
    assert.equal(res.status, 200);
    acknowledged.add(id);
  }
  // Writers keep creating plants during the backup; each records the ids the server acknowledged.
  let writing = true;
  let next = 1_000;
  let ackedDuringBackup = 0;
  let backupRunning = false;
  const writers = Array.from({ length: WRITERS }, async () => {
    while (writing) {
      const id = next++;
      const res = await postJson(server.url, s.secret, '/plants', { id, name: `during ${id}` });
      assert.equal(res.status, 200, await res.text());
      acknowledged.add(id);
      if (backupRunning) ackedDuringBackup++;
    }
  });
  await eventually(() => acknowledged.size >= 300, () => `300 writes acknowledged (${acknowledged.size})`, 60_000, 5);

  const before = new Set(acknowledged);
  const backupFile = join(s.dir, 'backup.db');
  backupRunning = true;
  const backup = await runCli(['backup', backupFile], s.env);
  backupRunning = false;
  writing = false;
  await Promise.all(writers);
  assert.equal(backup.code, 0, backup.stderr);
  assert.match(backup.stdout, new RegExp(`^Backed up the SQLite database ${s.file} to ${backupFile} \\(schema version \\d+, [\\d,]+ bytes\\); the integrity check passed\\.$`, 'm'));
  // The server was not held up: it kept acknowledging writes while the command ran.
  assert.ok(ackedDuringBackup > 0, 'no write was acknowledged while the backup ran');
  assert.equal(statSync(backupFile).mode & 0o777, 0o600);
  const backedUp = count(backup.stdout, 'plants');
  assert.ok(backedUp >= before.size && backedUp <= acknowledged.size, `${backedUp} plants backed up, ${before.size} acknowledged before`);
  const pending = /^ {2}webhook_deliveries: \d+ \((\d+) pending\)$/m.exec(backup.stdout);
  assert.ok(pending && Number(pending[1]) > 0, backup.stdout);

  // Restore into a new database: created, then served by a new server with the old token.
  const restoredFile = join(s.dir, 'restored', 'plants.db');
  const env = { ...s.env, DATABASE_URL: `sqlite:${restoredFile}` };
  const restore = await runCli(['restore', backupFile], env);
  assert.equal(restore.code, 0, restore.stderr);
  assert.match(restore.stderr, /which is created now/);
  assert.equal(count(restore.stdout, 'plants'), backedUp);
  const ids = new Set((rows(restoredFile, 'SELECT id FROM plants') as number[]).map(Number));
  assert.equal(ids.size, backedUp);
  for (const id of before) assert.ok(ids.has(id), `plant ${id}, acknowledged before the backup, is missing`);
  assert.equal(rows(restoredFile, 'SELECT count(*) FROM api_tokens')[0], 1);
  assert.equal(rows(restoredFile, "SELECT count(*) FROM webhook_deliveries WHERE status = 'pending'")[0], Number(pending[1]));

  const restored = await spawnServer(t, env);
  const auth = { authorization: `Bearer ${s.secret}` };
  const seed = await fetch(`${restored.url}/plants/1`, { headers: auth });
  assert.equal(seed.status, 200);
  assert.equal(((await seed.json()) as { name: string }).name, 'seed 1');
  const subs = (await (await fetch(`${restored.url}/webhooks`, { headers: auth })).json()) as { id: string }[];
  assert.deepEqual(subs.map((x) => x.id), [subscriptionId]);
  assert.equal((await postJson(restored.url, s.secret, '/plants', { id: 999_999, name: 'after the restore' })).status, 200);
});

test('restore refuses a store in use, or holding data without --force, and --force replaces it', async (t) => {
  const source = await store(t);
  assert.equal((await runCli(['backup', join(source.dir, 'b.db')], source.env)).code, 0);
  const backupFile = join(source.dir, 'b.db');

  const target = await store(t, 'target.db');
  const server = await spawnServer(t, target.env);
  assert.equal((await postJson(server.url, target.secret, '/plants', { id: 7, name: 'kept' })).status, 200);
  const inUse = await runCli(['restore', '--force', backupFile], target.env);
  assert.equal(inUse.code, 1);
  assert.match(inUse.stderr, /is in use by another process \(a running server\?\)\. Stop it, then restore\./);
  assert.equal((await fetch(`${server.url}/plants/7`, { headers: { authorization: `Bearer ${target.secret}` } })).status, 200);
  server.proc.kill('SIGTERM');
  assert.equal(await server.exited, 0);

  const refused = await runCli(['restore', backupFile], target.env);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /holds data \(1 api_tokens, 1 plants, 1 webhook_events\)\. Restore into an empty or new database, or add --force to replace it\./);
  assert.deepEqual(rows(target.file, 'SELECT name FROM plants'), ['kept']);

  // A store whose counter is ahead of the clock's floor (it issued versions fast, or a clock was set back):
  // the restored counter moves past what the replaced store issued, so none of its versions comes again.
  const ahead = 8_000_000_000_000_000n;
  const db = new Database(target.file);
  db.prepare('UPDATE plant_version_counter SET last = ?').run(ahead);
  db.close();
  const forced = await runCli(['restore', '--force', backupFile], target.env);
  assert.equal(forced.code, 0, forced.stderr);
  assert.deepEqual(rows(target.file, 'SELECT name FROM plants'), []);
  assert.match(forced.stdout, new RegExp(`^Versions continue above ${ahead}: `, 'm'));
  // The backup's token, not the target's: the store is the backup's now.
  assert.deepEqual(rows(target.file, 'SELECT token_hash FROM api_tokens'), rows(source.file, 'SELECT token_hash FROM api_tokens'));

  // An empty store (migrated, never used) needs no --force.
  const empty = tempDir(t);
  const emptyEnv = { DATABASE_URL: `sqlite:${join(empty, 'e.db')}` };
  assert.equal((await runCli(['migrate'], emptyEnv)).code, 0);
  assert.equal((await runCli(['restore', backupFile], emptyEnv)).code, 0);
});

test('backup refuses an existing file unless --force; restore refuses a file that is not a backup; nothing is touched', async (t) => {
  const s = await store(t);
  const existing = join(s.dir, 'existing.db');
  writeFileSync(existing, 'precious');
  const refused = await runCli(['backup', existing], s.env);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /existing\.db exists\. Name a new file, or add --force to replace it\./);
  assert.equal(readFileSync(existing, 'utf8'), 'precious');
  const forced = await runCli(['backup', '--force', existing], s.env);
  assert.equal(forced.code, 0, forced.stderr);
  assert.equal(count(forced.stdout, 'api_tokens'), 1);

  const target = join(s.dir, 'target.db');
  const env = { DATABASE_URL: `sqlite:${target}` };
  const garbage = join(s.dir, 'garbage.db');
  writeFileSync(garbage, 'not a database at all, but long enough to look like one to a careless reader'.repeat(100));
  const notDb = await runCli(['restore', garbage], env);
  assert.equal(notDb.code, 1);
  assert.match(notDb.stderr, /garbage\.db cannot be read as a SQLite database \(file is not a database\)\./);
  const other = join(s.dir, 'other.db');
  new Database(other).exec('CREATE TABLE t (x)');
  const notOurs = await runCli(['restore', other], env);
  assert.equal(notOurs.code, 1);
  assert.match(notOurs.stderr, /other\.db is a SQLite database but not a plant-store one/);
  assert.match((await runCli(['restore', join(s.dir, 'nope.db')], env)).stderr, /There is no backup file at .*nope\.db\./);
  assert.throws(() => statSync(target), /ENOENT/);
});

test('usage, and PostgreSQL stores pointed at pg_dump and pg_restore', async () => {
  const pg = { DATABASE_URL: 'postgres://user:secret@127.0.0.1:1/plants' };
  const backup = await runCli(['backup', '/tmp/never-written.db'], pg);
  assert.equal(backup.code, 1);
  assert.match(backup.stderr, /Backup works on a SQLite store, and DATABASE_URL names the PostgreSQL database 127\.0\.0\.1:1\/plants\. Use pg_dump or point-in-time recovery instead: see docs\/backup\.md\./);
  assert.doesNotMatch(backup.stderr, /secret/);
  const restore = await runCli(['restore', '/tmp/never-read.db'], pg);
  assert.equal(restore.code, 1);
  assert.match(restore.stderr, /Use pg_restore or point-in-time recovery/);

  const sqlite = { DATABASE_URL: 'sqlite:/nonexistent/never/created.db' };
  for (const args of [['backup'], ['restore'], ['backup', 'a', 'b'], ['restore', '--bogus', 'a']]) {
    const res = await runCli(args, sqlite);
    assert.equal(res.code, 2, `${args.join(' ')}: ${res.stderr}`);
    assert.match(res.stderr, new RegExp(`Run npx plant-store ${args[0]} --help for usage\\.`));
  }
  for (const command of ['backup', 'restore']) {
    const help = await runCli([command, '--help'], sqlite);
    assert.equal(help.code, 0);
    assert.match(help.stdout, new RegExp(`^Usage: plant-store ${command} FILE \\[--force\\]`));
  }
  const missing = await runCli(['backup', '/tmp/never-written.db'], sqlite);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /There is no SQLite database at \/nonexistent\/never\/created\.db/);
});
