// `plant-store import` and `export` exit codes 0 / 2 / 3: usage errors, help and an unreadable file, a commit
// that fails part way, and Ctrl-C during an import; each stop says exactly which lines were committed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { BIN, migratedDatabaseUrl, runCli } from '../helpers/app.js';
import { openStore } from '../../src/storage/open-store.js';
import { eventually } from '../helpers/sleep.js';
import { count, file, setup } from './import-export-support.js';

test('a commit that fails part way stops with exit 3 and says exactly which lines were committed', async (t) => {
  // Injects a failure with a SQLite trigger in the file: stays on SQLite.
  const { dir, env, db: dbPath } = await setup(t, true);
  const { store } = await openStore(env.DATABASE_URL!);
  await store.close();
  const db = new Database(dbPath);
  db.exec(`CREATE TRIGGER fail_on_13 BEFORE INSERT ON plants WHEN NEW.id = 13 BEGIN SELECT RAISE(ABORT, 'injected failure'); END`);
  db.close();
  const lines = Array.from({ length: 20 }, (_, i) => `{"id":${i + 1},"name":"p${i + 1}"}`);
  lines[2] = 'oops'; // line 3 invalid, before the failure
  lines[17] = 'oops'; // line 18 invalid, after it: never reached as far as the store is concerned
  const r = await runCli(['import', '--batch-size', '5', file(dir, 'p.jsonl', lines.join('\n'))], env);
  assert.equal(r.code, 3, r.stdout + r.stderr);
  // Batches: lines 1-6 (5 plants, line 3 invalid), 7-11, then 12-16 fails at id 13.
  assert.match(r.stderr, /the commit of lines 12 to 16 failed \(.*injected failure/);
  assert.match(r.stdout, /Lines 1 to 11 were committed; nothing after line 11 was stored/);
  assert.equal(count(r.stdout, 'imported'), 10);
  assert.equal(count(r.stdout, 'invalid'), 1);
  assert.match(r.stdout, /^ {2}line 3: /m);
  const exported = await runCli(['export'], env);
  assert.equal(exported.stdout.trim().split('\n').length, 10);
});

test('usage errors exit 2; help exits 0; an unreadable file exits 3 with nothing committed', async (t) => {
  const { dir, env } = await setup(t);
  for (const args of [['import'], ['import', 'a.txt'], ['import', '--format', 'xml', 'a.csv'], ['import', '--batch-size', '0', 'a.csv'],
    ['import', 'a.csv', 'b.csv'], ['import', '--bogus', 'a.csv'], ['export', 'extra'], ['export', '--tag', 'x']]) {
    const r = await runCli(args, env);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
  }
  for (const cmd of ['import', 'export']) {
    const r = await runCli([cmd, '--help'], env);
    assert.equal(r.code, 0);
    assert.match(r.stdout, new RegExp(`^Usage: plant-store ${cmd}`));
  }
  const top = await runCli(['--help'], env);
  assert.match(top.stdout, /import +Add plants/);
  assert.match(top.stdout, /export +Write every plant/);
  const missing = await runCli(['import', join(dir, 'missing.csv')], env);
  assert.equal(missing.code, 3);
  assert.match(missing.stderr, /ENOENT/);
  assert.match(missing.stderr, /Nothing was committed/);
  // --format overrides the extension.
  const r = await runCli(['import', '--format', 'csv', file(dir, 'p.txt', 'id,name\n1,a\n')], env);
  assert.equal(r.code, 0, r.stderr);
});

test('Ctrl-C stops an import after what was committed, with the summary saying exactly which lines, exit 3', async (t) => {
  // Made beforehand: the test reads the same database while the import writes it.
  const env = { DATABASE_URL: await migratedDatabaseUrl(t) };
  const proc = spawn(process.execPath, [BIN, 'import', '--batch-size', '2', '-'], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  // Lines 1-4 fill two batches; line 5 waits in the third, and standard input stays open.
  proc.stdin.write([1, 2, 3, 4, 5].map((id) => `{"id":${id},"name":"p${id}"}\n`).join(''));
  const { store } = await openStore(env.DATABASE_URL!);
  t.after(() => store.close());
  // Observes the commits through the database itself, then interrupts as a terminal's Ctrl-C would.
  await eventually(async () => (await store.listPlants({ limit: 10 })).length >= 4, 'the first two batches were not committed', 15_000, 20);
  proc.kill('SIGINT');
  assert.equal(await exited, 3, stdout + stderr);
  assert.match(stderr, /^plant-store: The import of standard input stopped: it was interrupted \(Ctrl-C\)\.$/m);
  assert.match(stdout, /Lines 1 to 4 were committed; nothing after line 4 was stored\./);
  assert.equal(count(stdout, 'imported'), 4);
  assert.match(stdout, /Running the same import again is safe/);
  assert.deepEqual((await store.listPlants({ limit: 10 })).map((p) => p.id), [1n, 2n, 3n, 4n]);
});
