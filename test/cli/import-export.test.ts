// `plant-store import` and `export`: JSON Lines and CSV by the API's rules, identical re-imports skipped,
// conflicts and invalid lines reported by line number, int64 ids exact, an export that imports into an
// identical store, newPlant events for new plants, the exit codes 0 / 1 / 2 / 3, Ctrl-C during an import,
// a reader that stops early, and a CSV header given to the JSON Lines reader.
import { sequenced } from '../helpers/events.js';
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { BIN, freshDatabaseUrl, migratedDatabaseUrl, runCli, tempDir } from '../helpers/app.js';
import { openStore } from '../../src/storage/open-store.js';
import { withoutVersion } from '../helpers/webhooks.js';
import { eventually } from '../helpers/sleep.js';

/** A folder for input files and a new database of the store under test (`sqlite` forces a SQLite file, `db`). */
async function setup(t: TestContext, sqlite = false): Promise<{ dir: string; env: Record<string, string>; db: string }> {
  const dir = tempDir(t);
  const db = join(dir, 'plants.db');
  return { dir, db, env: { DATABASE_URL: sqlite ? `sqlite:${db}` : await freshDatabaseUrl(t) } };
}

function file(dir: string, name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}


function count(stdout: string, what: string): number {
  const m = new RegExp(`^${what}: (\\d+)$`, 'm').exec(stdout);
  assert.ok(m, `no "${what}" in:\n${stdout}`);
  return Number(m[1]);
}

const MAX = '9223372036854775807';
const MIN = '-9223372036854775808';

test('JSON Lines: imported, identical, conflicts and invalid lines by line number; int64 edges exact', async (t) => {
  const { dir, env } = await setup(t);
  const lines = [
    `{"id":1,"name":"Fern"}`, // 1
    `{"id":${MAX},"name":"max","tag":"edge"}`, // 2
    `{"id":${MIN},"name":"min"}`, // 3
    `{"id":9007199254740993,"name":"2^53+1"}`, // 4
    `not json`, // 5
    `{"id":9223372036854775808,"name":"too big"}`, // 6
    `{"id":7}`, // 7: no name
    `{"id":1,"name":"Not a fern"}`, // 8: conflict with line 1
    `{"id":1,"name":"Fern"}`, // 9: identical
    `{"id":"8","name":"string id"}`, // 10
    `{"id":9,"name":"x","tag":5}`, // 11
    `{"id":10,"name":"\\ud800"}`, // 12: unpaired surrogate
    `[1,2]`, // 13
    `{"id":1.5,"name":"fraction"}`, // 14
    ``, // 15: blank, skipped
    `{"id":11,"name":"extra fields are ignored","color":"green"}`, // 16
    `{"id":12.0,"name":"zero fraction"}`, // 17
    `{"id":-0,"name":"negative zero"}`, // 18
    `{"id":1e3,"name":"exponent"}`, // 19
  ];
  const path = file(dir, 'plants.jsonl', lines.join('\n') + '\n');
  const first = await runCli(['import', path], env);
  assert.equal(first.code, 1, first.stderr);
  assert.equal(count(first.stdout, 'imported'), 5);
  assert.equal(count(first.stdout, 'identical'), 1);
  assert.equal(count(first.stdout, 'conflicts'), 1);
  assert.match(first.stdout, /^ {2}line 8: id 1 is already stored with a different name or tag$/m);
  assert.equal(count(first.stdout, 'invalid'), 11);
  for (const [line, reason] of [
    [5, /not valid JSON/],
    [6, /id must be an integer from -2\^63 to 2\^63-1/],
    [7, /name is required/],
    [10, /id must be an integer$/m],
    [11, /tag must be a string/],
    [12, /well-formed Unicode/],
    [13, /not a JSON object/],
    [14, /id must be an integer$/m],
    [17, /^id must be written as a plain integer \(digits only: no fraction, exponent or -0\)$/],
    [18, /^id must be written as a plain integer/],
    [19, /^id must be written as a plain integer/],
  ] as const) {
    const m = new RegExp(`^ {2}line ${line}: (.*)$`, 'm').exec(first.stdout);
    assert.ok(m, `line ${line} not reported:\n${first.stdout}`);
    assert.match(m[1]!, reason);
  }
  assert.doesNotMatch(first.stdout, /line 15:/);

  const exported = await runCli(['export'], env);
  assert.equal(exported.code, 0, exported.stderr);
  assert.equal(
    exported.stdout,
    [
      `{"id":${MIN},"name":"min"}`,
      `{"id":1,"name":"Fern"}`,
      `{"id":11,"name":"extra fields are ignored"}`,
      `{"id":9007199254740993,"name":"2^53+1"}`,
      `{"id":${MAX},"name":"max","tag":"edge"}`,
    ].join('\n') + '\n',
  );

  // The same file again: every valid line is now identical, except the conflict, still reported.
  const again = await runCli(['import', path], env);
  assert.equal(again.code, 1);
  assert.equal(count(again.stdout, 'imported'), 0);
  assert.equal(count(again.stdout, 'identical'), 6);
  assert.equal(count(again.stdout, 'conflicts'), 1);
});

test('a clean import exits 0, and importing it again skips every row as identical with exit 0', async (t) => {
  const { dir, env } = await setup(t);
  const path = file(dir, 'p.ndjson', Array.from({ length: 120 }, (_, i) => `{"id":${i * 3},"name":"p${i}","tag":"t${i % 4}"}`).join('\n'));
  const first = await runCli(['import', '--batch-size', '7', path], env);
  assert.equal(first.code, 0, first.stderr + first.stdout);
  assert.equal(count(first.stdout, 'imported'), 120);
  const second = await runCli(['import', path], env);
  assert.equal(second.code, 0);
  assert.equal(count(second.stdout, 'imported'), 0);
  assert.equal(count(second.stdout, 'identical'), 120);
});

test('CSV: header, quotes, commas and line breaks in names, empty tag, bad records by the line they start on', async (t) => {
  const { dir, env } = await setup(t);
  const csv = [
    'id,name,tag', // 1
    '1,"Fern, the ""big"" one",green', // 2
    '2,"two\nlines",', // 3-4
    `${MAX},max,edge`, // 5
    `${MIN},min,`, // 6
    '3,bad"quote,x', // 7
    '4,a,b,c', // 8
    '9223372036854775808,too big,', // 9
    '007,leading zeros,', // 10
    ',no id,', // 11
    '5,"closed"junk,x', // 12
    '1,"Fern, the ""big"" one",green', // 13: identical
    '2,other,', // 14: conflict
    '-0,negative zero,', // 15
    '7.0,zero fraction,', // 16
    '8e0,exponent,', // 17
    '6,"never closed', // 18
  ].join('\r\n');
  const path = file(dir, 'plants.csv', csv);
  const r = await runCli(['import', path], env);
  assert.equal(r.code, 1, r.stderr);
  assert.equal(count(r.stdout, 'imported'), 4);
  assert.equal(count(r.stdout, 'identical'), 1);
  assert.equal(count(r.stdout, 'conflicts'), 1);
  assert.match(r.stdout, /^ {2}line 14: id 2 /m);
  assert.equal(count(r.stdout, 'invalid'), 10);
  for (const [line, reason] of [
    [7, /quote inside an unquoted field/],
    [8, /expected 3 fields, found 4/],
    [9, /from -2\^63 to 2\^63-1/],
    [10, /id must be an integer$/m],
    [11, /id is required/],
    [12, /after a closing quote/],
    [15, /^id must be written as a plain integer \(digits only: no fraction, exponent or -0\)$/],
    [16, /^id must be written as a plain integer/],
    [17, /^id must be written as a plain integer/],
    [18, /not closed/],
  ] as const) {
    const m = new RegExp(`^ {2}line ${line}: (.*)$`, 'm').exec(r.stdout);
    assert.ok(m, `line ${line} not reported:\n${r.stdout}`);
    assert.match(m[1]!, reason);
  }
  const exported = await runCli(['export'], env);
  assert.equal(
    exported.stdout,
    [
      `{"id":${MIN},"name":"min"}`,
      `{"id":1,"name":"Fern, the \\"big\\" one","tag":"green"}`,
      `{"id":2,"name":"two\\nlines"}`,
      `{"id":${MAX},"name":"max","tag":"edge"}`,
    ].join('\n') + '\n',
  );
  // Columns in any order, tag optional; a bad header stops before anything is committed.
  assert.equal((await runCli(['import', file(dir, 'b.csv', 'name,id\nRose,77\n')], env)).code, 0);
  const bad = await runCli(['import', file(dir, 'c.csv', 'id,title\n78,x\n')], env);
  assert.equal(bad.code, 3);
  assert.match(bad.stdout, /Nothing was committed/);
  assert.match(bad.stderr, /the header on line 1 must name the columns id and name/);
});

test('export | import into a fresh database gives an identical export (stdin, many pages)', async (t) => {
  const a = await setup(t);
  const b = await setup(t);
  const rows = Array.from({ length: 2500 }, (_, i) => {
    const id = i % 2 === 0 ? 9223372036854770000n + BigInt(i) : -BigInt(i) * 1000003n;
    const tag = i % 3 === 0 ? `,"tag":"t\\"${i}"` : i % 5 === 0 ? `,"tag":""` : '';
    return `{"id":${id},"name":"plant ☘ ${i}, \\u00e9"${tag}}`;
  });
  assert.equal((await runCli(['import', file(a.dir, 'in.jsonl', rows.join('\n'))], a.env)).code, 0);
  const first = await runCli(['export'], a.env);
  assert.equal(first.code, 0, first.stderr);
  assert.equal(first.stdout.split('\n').length, 2501);
  const imported = await runCli(['import', '-'], b.env, first.stdout);
  assert.equal(imported.code, 0, imported.stderr);
  assert.equal(count(imported.stdout, 'imported'), 2500);
  const second = await runCli(['export'], b.env);
  assert.equal(second.stdout, first.stdout);

  // --q and --sort as GET /plants takes them, over several pages: a name order pages on name and id.
  const lines = first.stdout.trimEnd().split('\n');
  const nameOf = (line: string) => (JSON.parse(line) as { name: string }).name;
  assert.equal((await runCli(['export', '--q', ' 1', '--sort=-name'], a.env)).code, 2, 'a q of two characters is a usage error');
  const none = await runCli(['export', '--q', 'É" ', '--sort=-name'], a.env);
  assert.equal(none.stdout, '', 'no name has a quote');
  const all = await runCli(['export', '--q', ', É', '--sort=-name'], a.env);
  assert.equal(all.code, 0, all.stderr);
  assert.deepEqual(all.stdout.trimEnd().split('\n'), [...lines].sort((x, y) => Buffer.compare(Buffer.from(nameOf(y)), Buffer.from(nameOf(x)))));
  assert.equal((await runCli(['export', '--sort', 'size'], a.env)).code, 2, 'an unknown sort is a usage error');
});

test('new plants get a newPlant event for each active subscription; identical ones do not', async (t) => {
  // Reads the outbox tables from the SQLite file directly: stays on SQLite.
  const { dir, env } = await setup(t, true);
  const { store } = await openStore(env.DATABASE_URL!);
  await store.webhooks.insertSubscription(
    {
      id: 'wh_test', url: 'https://example.com/hook', description: null, events: ['newPlant'], format: 'plain', secret: 'whsec_dGVzdHRlc3R0ZXN0dGVzdHRlc3Q=',
      createdAt: new Date(), disabledAt: null, disabledReason: null,
    },
    () => undefined,
  );
  await store.close();
  const path = file(dir, 'p.jsonl', `{"id":${MAX},"name":"a"}\n{"id":2,"name":"b","tag":"x"}\n`);
  assert.equal((await runCli(['import', path], env)).code, 0);
  assert.equal((await runCli(['import', path], env)).code, 0);
  // The deliveries are made by the next sequencing pass (the next serve's first).
  const reopened = await openStore(env.DATABASE_URL!);
  assert.equal(await sequenced(reopened.store), 2);
  await reopened.store.close();
  const db = new Database(env.DATABASE_URL!.slice('sqlite:'.length), { readonly: true });
  t.after(() => db.close());
  const payloads = db.prepare('SELECT payload FROM webhook_events ORDER BY payload').pluck().all();
  assert.deepEqual((payloads as string[]).map(withoutVersion), ['{"id":2,"name":"b","tag":"x"}', `{"id":${MAX},"name":"a"}`]);
  assert.equal(db.prepare("SELECT count(*) FROM webhook_deliveries WHERE subscription_id = 'wh_test' AND status = 'pending'").pluck().get(), 2);
});

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

test('bytes that are not UTF-8 and over-long lines are invalid lines, and the lines around them still import', async (t) => {
  const { dir, env } = await setup(t);
  const path = join(dir, 'p.jsonl');
  writeFileSync(path, Buffer.concat([
    Buffer.from('\uFEFF{"id":1,"name":"after a BOM"}\r\n{"id":2,"name":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}\n'),
    Buffer.from(`{"id":3,"name":"${'x'.repeat(1024 * 1024)}"}\n`),
    Buffer.from('{"id":4,"name":"last line without a newline"}'),
  ]));
  const r = await runCli(['import', path], env);
  assert.equal(r.code, 1, r.stderr);
  assert.equal(count(r.stdout, 'imported'), 2);
  assert.match(r.stdout, /^ {2}line 2: not valid UTF-8$/m);
  assert.match(r.stdout, /^ {2}line 3: line longer than 1 MiB$/m);
  const exported = await runCli(['export'], env);
  assert.equal(exported.stdout, '{"id":1,"name":"after a BOM"}\n{"id":4,"name":"last line without a newline"}\n');
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

test('export into a reader that stops early (export | head -1) exits 0 without a message', async (t) => {
  const { dir, env } = await setup(t);
  // Far more than a pipe holds, so the export is still writing when head goes away.
  const rows = Array.from({ length: 30_000 }, (_, i) => `{"id":${i + 1},"name":"plant ${i + 1}"}`);
  assert.equal((await runCli(['import', file(dir, 'many.jsonl', rows.join('\n'))], env)).code, 0);
  const piped = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const proc = spawn('bash', ['-o', 'pipefail', '-c', `"$0" "$1" export | head -1`, process.execPath, BIN], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    proc.on('close', (code) => resolve({ code, stdout, stderr }));
  });
  assert.equal(piped.code, 0, piped.stderr);
  assert.equal(piped.stdout, '{"id":1,"name":"plant 1"}\n');
  // Only the line naming the database: no EPIPE, no stack.
  assert.deepEqual(piped.stderr.trim().split('\n').map((l) => /^plant-store: Using the /.test(l)), [true], piped.stderr);
});

test('a CSV header on standard input, read as JSON Lines by default, says to use --format csv (exit 2, nothing stored)', async (t) => {
  const env = { DATABASE_URL: await migratedDatabaseUrl(t) };
  const csv = 'id,name,tag\n1,Fern,green\n2,Moss,\n';
  const r = await runCli(['import', '-'], env, csv);
  assert.equal(r.code, 2, r.stdout + r.stderr);
  assert.match(r.stderr, /Line 1 of standard input is a CSV header, but standard input is read as JSON Lines\. Use --format csv: npx plant-store import --format csv -/);
  assert.match(r.stderr, /Nothing was committed/);
  assert.equal(r.stdout, '');
  assert.equal((await runCli(['export'], env)).stdout, '');
  // As told: the same input with --format csv imports. --format jsonl keeps the header an invalid line.
  const asCsv = await runCli(['import', '--format', 'csv', '-'], env, csv);
  assert.equal(asCsv.code, 0, asCsv.stderr);
  assert.equal(count(asCsv.stdout, 'imported'), 2);
  const forced = await runCli(['import', '--format', 'jsonl', '-'], env, 'id,name\n');
  assert.equal(forced.code, 1, forced.stderr);
  assert.match(forced.stdout, /^ {2}line 1: not valid JSON/m);
});
