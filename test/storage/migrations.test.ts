// Versioned migrations: `plant-store migrate` creates and upgrades the store, reports what it did, refuses
// stores it cannot upgrade (exit 1, a clear message, nothing half-done), and `serve` refuses them too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { runCli, tempDir } from '../helpers/app.js';
import { MigrationError } from '../../src/storage/migrator.js';
import { openStore } from '../../src/storage/open-store.js';
import { MIGRATIONS } from '../../src/storage/sqlite/migrations.js';
import { runIn } from '../helpers/cli.js';
import { eventually } from '../helpers/sleep.js';

const LATEST = MIGRATIONS.at(-1)!;
const pad = (v: number) => String(v).padStart(4, '0');

function tables(file: string): string[] {
  const db = new Database(file, { readonly: true });
  try {
    return (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all() as string[]);
  } finally {
    db.close();
  }
}

test('migrate on a fresh path creates the folders and the file, applies every migration, then reports them already applied', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'not', 'yet', 'there', 'x.db');
  const env = { DATABASE_URL: `sqlite:${file}` };

  const first = await runCli(['migrate'], env);
  assert.equal(first.code, 0, first.stderr);
  assert.ok(existsSync(file), 'the database file was created');
  for (const m of MIGRATIONS) assert.match(first.stdout, new RegExp(`^${pad(m.version)} ${m.name}: applied$`, 'm'));
  // plant_names is the FTS5 index of names (schema version 11); the others are its shadow tables.
  const nameIndex = ['plant_names', 'plant_names_config', 'plant_names_data', 'plant_names_docsize', 'plant_names_idx'];
  assert.deepEqual(tables(file), ['api_tokens', 'event_log', 'event_tickets', ...nameIndex, 'plant_version_counter', 'plants', 'schema_migrations', 'store_restores', 'webhook_attempts', 'webhook_deliveries', 'webhook_events', 'webhook_subscriptions']);

  // The file is in WAL mode (a property of the file, visible to any connection).
  const db = new Database(file, { readonly: true });
  assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
  assert.deepEqual(db.prepare('SELECT version FROM schema_migrations ORDER BY version').pluck().all(), MIGRATIONS.map((m) => m.version));
  db.close();

  const again = await runCli(['migrate'], env);
  assert.equal(again.code, 0, again.stderr);
  for (const m of MIGRATIONS) assert.match(again.stdout, new RegExp(`^${pad(m.version)} ${m.name}: already applied$`, 'm'));
  assert.doesNotMatch(again.stdout, /: applied$/m);
});

test('migrate fails with exit 1 and a message naming the migration when a table it creates already exists with another shape', async (t) => {
  const file = join(tempDir(t), 'x.db');
  const db = new Database(file);
  db.exec("CREATE TABLE plants (something TEXT); INSERT INTO plants VALUES ('precious')");
  db.close();

  const r = await runCli(['migrate'], { DATABASE_URL: `sqlite:${file}` });
  assert.equal(r.code, 1);
  assert.match(r.stderr, new RegExp(`migration ${MIGRATIONS[0]!.version} \\(${MIGRATIONS[0]!.name}\\) failed: .*table plants already exists`));
  assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
  // Nothing of the failed migration was kept, and the existing data is untouched.
  assert.deepEqual(tables(file), ['plants', 'schema_migrations']);
  const check = new Database(file, { readonly: true });
  assert.deepEqual(check.prepare('SELECT something FROM plants').pluck().all(), ['precious']);
  assert.equal(check.prepare('SELECT count(*) FROM schema_migrations').pluck().get(), 0);
  check.close();
});

test('migrate refuses a database that has a migration newer than this build knows', async (t) => {
  const file = join(tempDir(t), 'x.db');
  assert.equal((await runCli(['migrate'], { DATABASE_URL: `sqlite:${file}` })).code, 0);
  const future = LATEST.version + 1;
  const db = new Database(file);
  db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'from the future', 0)").run(future);
  db.close();

  const r = await runCli(['migrate'], { DATABASE_URL: `sqlite:${file}` });
  assert.equal(r.code, 1);
  assert.match(r.stderr, new RegExp(`migration ${future}\\b.*newer than this build knows`));
  assert.match(r.stderr, /upgrade plant-store/);
});

test('a file that is not a SQLite database: migrate exits 1 naming the file and the problem', async (t) => {
  const file = join(tempDir(t), 'notes.db');
  const content = 'these are my notes, not a database\n'.repeat(200);
  writeFileSync(file, content);
  const r = await runCli(['migrate'], { DATABASE_URL: `sqlite:${file}` });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /not a database/);
  assert.ok(r.stderr.includes(file), `the message names the file: ${r.stderr}`);
  assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
  assert.equal(readFileSync(file, 'utf8'), content, 'the file was not modified');
});

test('a DATABASE_URL path that cannot be created: migrate exits 1 naming it', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'plain-file'), 'x');
  const file = join(dir, 'plain-file', 'x.db');
  const r = await runCli(['migrate'], { DATABASE_URL: `sqlite:${file}` });
  assert.equal(r.code, 1);
  assert.ok(r.stderr.includes(file), `the message names the path: ${r.stderr}`);
});

test('serve with a failing migration exits 1 with the migration message and never listens', async (t) => {
  const file = join(tempDir(t), 'x.db');
  const db = new Database(file);
  db.exec('CREATE TABLE api_tokens (other INTEGER)');
  db.close();
  const r = await runIn(dirname(file), ['serve'], { DATABASE_URL: `sqlite:${file}`, PORT: '0', LOG_LEVEL: 'info', BOOTSTRAP_TOKEN: 'false' }, 10_000);
  assert.equal(r.signal, null, 'serve kept running');
  assert.equal(r.code, 1);
  assert.match(r.stderr, /migration 1 .*failed: .*table api_tokens already exists/);
  assert.doesNotMatch(r.stdout, /Server listening/);
});

test('a failure in a later migration keeps the earlier ones and nothing of the failed one', async (t) => {
  const url = `sqlite:${join(tempDir(t), 'x.db')}`;
  const migrations = [
    { version: 1, name: 'one', sql: 'CREATE TABLE a (x INTEGER);' },
    { version: 2, name: 'two', sql: 'CREATE TABLE b (x INTEGER); CREATE TABLE a (y INTEGER);' },
    { version: 3, name: 'three', sql: 'CREATE TABLE c (x INTEGER);' },
  ];
  await assert.rejects(openStore(url, { migrations }), (err: unknown) => {
    assert.ok(err instanceof MigrationError);
    assert.match(err.message, /migration 2 \(two\) failed: table a already exists/);
    assert.deepEqual(err.results.map((r) => `${r.version}:${r.status}`), ['1:applied', '2:failed']);
    return true;
  });
  assert.deepEqual(tables(url.slice('sqlite:'.length)), ['a', 'schema_migrations']);

  // Fixed in a later build: the next start applies the rest and leaves the first alone.
  const fixed = [migrations[0]!, { ...migrations[1]!, sql: 'CREATE TABLE b (x INTEGER);' }, migrations[2]!];
  const { store, migrations: results } = await openStore(url, { migrations: fixed });
  await store.close();
  assert.deepEqual(results.map((r) => `${r.version}:${r.status}`), ['1:already-applied', '2:applied', '3:applied']);
  assert.deepEqual(tables(url.slice('sqlite:'.length)), ['a', 'b', 'c', 'schema_migrations']);
});

test('processes that start on the same fresh file at the same moment all succeed; exactly one applies each migration', async (t) => {
  const dir = tempDir(t);
  const openStoreUrl = new URL('../../src/storage/open-store.js', import.meta.url).href;
  // The race is short, so it is run a few times, each on a new file.
  for (let round = 0; round < 3; round++) {
    const url = `sqlite:${join(dir, `race-${round}.db`)}`;
    // Each process opens the store when told "go", so that they really race (like two instances, or a
    // `token create` during the first `serve`).
    const code = `
      import { openStore } from ${JSON.stringify(openStoreUrl)};
      process.stdout.write('ready\\n');
      process.stdin.once('data', async () => {
        try {
          const { store, migrations } = await openStore(${JSON.stringify(url)});
          await store.close();
          process.stdout.write(JSON.stringify(migrations.map((m) => m.status)) + '\\n');
        } catch (err) {
          process.stdout.write('ERROR ' + err.message + '\\n');
        }
        process.exit(0);
      });`;
    const N = 4;
    const procs = Array.from({ length: N }, () => spawn(process.execPath, ['--input-type=module', '-e', code], { stdio: ['pipe', 'pipe', 'inherit'] }));
    t.after(() => procs.forEach((p) => p.exitCode === null && p.kill('SIGKILL')));
    const outputs = procs.map((p) => {
      let out = '';
      p.stdout.on('data', (d: Buffer) => (out += d.toString()));
      return () => out;
    });
    const exits = procs.map((p) => new Promise((r) => p.on('exit', r)));
    await eventually(() => outputs.every((o) => o().includes('ready')), 'processes did not start', 15_000);
    for (const p of procs) p.stdin.write('go\n');
    await Promise.all(exits);
    const results = outputs.map((o) => o().replace('ready\n', '').trim());
    assert.deepEqual(results.filter((r) => r.startsWith('ERROR')), [], `round ${round}:\n${results.join('\n')}`);
    const statuses = results.map((r) => JSON.parse(r) as string[]);
    for (let i = 0; i < MIGRATIONS.length; i++) {
      assert.equal(statuses.filter((s) => s[i] === 'applied').length, 1, `migration ${MIGRATIONS[i]!.version}: ${results.join(' ')}`);
    }
  }
});
