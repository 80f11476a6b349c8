// On a terminal the log is for a person: readable lines (time, level, message, fields), never JSON; through a
// pipe or into a file it stays JSON lines (test/ops/log-output.test.ts). The terminal is a real one, from script(1).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../helpers/app.js';

const LOGGER = new URL('../../src/observations/logger.js', import.meta.url).href;
const BODY = `import { createLogger } from ${JSON.stringify(LOGGER)};
const log = createLogger({ logLevel: 'info' });
log.info({ url: 'http://127.0.0.1:8080', docs: 'http://127.0.0.1:8080/docs' }, 'plant-store is listening');
log.warn({ headers: { authorization: 'Bearer pst_secret' } }, 'odd request');
log.error({ err: new Error('disk on fire') }, 'commit failed');
`;

function run(dir: string, viaTerminal: boolean, env: Record<string, string> = {}): string {
  const file = join(dir, 'log.mjs');
  writeFileSync(file, BODY);
  const command = `'${process.execPath}' '${file}'`;
  const r = viaTerminal
    ? spawnSync('script', ['-qec', command, '/dev/null'], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 20_000 })
    : spawnSync(process.execPath, [file], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 20_000 });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.replace(/\r\n/g, '\n');
}

test('on a terminal each log line reads as time, level, message and fields, with an error stack below; no JSON', (t) => {
  const out = run(tempDir(t), true, { NO_COLOR: '1' });
  const lines = out.split('\n').filter(Boolean);
  assert.match(lines[0]!, /^\d\d:\d\d:\d\d\.\d{3} INFO  plant-store is listening {2}url=http:\/\/127\.0\.0\.1:8080 docs=http:\/\/127\.0\.0\.1:8080\/docs$/);
  assert.match(lines[1]!, /^\d\d:\d\d:\d\d\.\d{3} WARN  odd request {2}headers=\{"authorization":"\[redacted\]"\}$/);
  assert.match(lines[2]!, /^\d\d:\d\d:\d\d\.\d{3} ERROR commit failed$/);
  assert.match(lines[3]!, /^ {4}Error: disk on fire$/);
  assert.match(lines[4]!, /^ {4}\s*at /);
  assert.ok(!out.includes('pst_secret'), 'the censored header reached the terminal');
  for (const l of lines) assert.doesNotMatch(l, /^\{/, `a JSON line on the terminal: ${l}`);
});

test('colours on a terminal unless NO_COLOR is set; through a pipe the same logger writes JSON lines', (t) => {
  const dir = tempDir(t);
  const coloured = run(dir, true, { NO_COLOR: '' });
  assert.match(coloured, /\u001b\[32mINFO \u001b\[0m plant-store is listening/);
  const piped = run(dir, false).split('\n').filter(Boolean).map((l) => JSON.parse(l) as { msg: string; level: number });
  assert.deepEqual(piped.map((l) => [l.level, l.msg]), [[30, 'plant-store is listening'], [40, 'odd request'], [50, 'commit failed']]);
});
