// `plant-store export` in pipes: export | import into a fresh database gives an identical export (with --q and
// --sort over many pages), and a reader that stops early (export | head -1) ends the export quietly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { BIN, runCli } from '../helpers/app.js';
import { count, file, setup } from './import-export-support.js';

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
