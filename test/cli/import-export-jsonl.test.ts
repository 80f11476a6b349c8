// `plant-store import` of JSON Lines by the API's rules: imported, identical, conflicts and invalid lines
// reported by line number, int64 ids exact, a clean import and its identical re-import (exit 0), and bytes that
// are not UTF-8 or lines over 1 MiB among lines that still import. The other parts: import-export-csv.test.ts,
// import-export-pipes.test.ts, import-export-events.test.ts and import-export-exits.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli } from '../helpers/app.js';
import { count, file, MAX, MIN, setup } from './import-export-support.js';

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
