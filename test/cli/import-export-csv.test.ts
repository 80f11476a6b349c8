// `plant-store import` of CSV: the header, quotes, commas and line breaks in names, an empty tag, bad records by
// the line they start on, columns in any order; and a CSV header on standard input read as JSON Lines.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { migratedDatabaseUrl, runCli } from '../helpers/app.js';
import { count, file, MAX, MIN, setup } from './import-export-support.js';

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
