// The README's curl walk-through works as written, in order: its shell block runs against a real `plant-store
// serve` (started in a fresh folder, as a newcomer would, the port the only change), and every curl answers the
// status the README shows under it, with the JSON body it shows when it shows one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, tempDir } from '../helpers/app.js';
import { freshDatabaseUrl, TEST_STORE } from '../helpers/test-store.js';
import { cleanEnv, serveIn } from '../helpers/cli.js';
import { parseExact } from '../helpers/exact-json.js';

const README = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');
const README_ORIGIN = 'http://127.0.0.1:8080';

interface Step {
  command: string;
  status: number;
  /** The JSON body the README shows, when it shows one. */
  body?: string;
}

/** The shell block of the README's walk-through section. */
function walkthroughBlock(): string {
  const section = README.split(/^## /m).find((s) => s.startsWith('A walk through with curl'));
  assert.ok(section, 'the README has no "A walk through with curl" section');
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1];
  assert.ok(block, 'the walk-through section has no sh block');
  return block;
}

/** Each curl command (continuation lines joined) with the status and body shown in the comments under it. */
function curlSteps(block: string): Step[] {
  const lines = block.split('\n');
  const steps: Step[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!lines[i]!.startsWith('curl ')) continue;
    let command = lines[i]!;
    while (command.endsWith('\\')) command = `${command.slice(0, -1)} ${lines[++i]!.trim()}`;
    const shown = [];
    while (lines[i + 1]?.startsWith('# ')) shown.push(lines[++i]!.slice(2));
    const status = /^(?:HTTP\/1\.1 )?(\d{3})\b/.exec(shown[0] ?? '')?.[1];
    assert.ok(status, `the README shows no status under: ${command}`);
    steps.push({ command, status: Number(status), body: shown.find((l) => l.startsWith('{') || l.startsWith('[')) });
  }
  return steps;
}

test(`the README's curl walk-through, run as written against a real server (${TEST_STORE}), answers every status it shows`, async (t) => {
  const block = walkthroughBlock();
  const steps = curlSteps(block);
  assert.ok(steps.length >= 8, `only ${steps.length} curl commands found`);
  assert.match(block, /npx plant-store token create/, 'the walk-through no longer makes its token');

  const dir = tempDir(t);
  // On SQLite exactly the README's setting: no DATABASE_URL, so server and CLI share ./data/ in the folder.
  const env = TEST_STORE === 'postgres' ? { DATABASE_URL: await freshDatabaseUrl(t) } : {};
  const server = await serveIn(t, dir, { ...env, BOOTSTRAP_TOKEN: 'true' });

  // The block itself, the port aside. curl records each answer's status and body for the comparison, and
  // `npx plant-store` is this checkout's command (in a clone npx finds it in node_modules/.bin).
  const script = [
    'set -e',
    'n=0',
    `curl() { n=$((n+1)); command curl "$@" -sS -o "$WALK/body.$n" -w '%{http_code}\\n' >> "$WALK/statuses"; }`,
    `npx() { if [ "$1" = plant-store ]; then shift; "$PLANT_STORE_NODE" "$PLANT_STORE_BIN" "$@"; else command npx "$@"; fi; }`,
    block.split(README_ORIGIN).join(server.url),
  ].join('\n');
  writeFileSync(join(dir, 'walk.sh'), script);
  const run = spawnSync('sh', [join(dir, 'walk.sh')], {
    cwd: dir,
    env: cleanEnv({ ...env, WALK: dir, PLANT_STORE_NODE: process.execPath, PLANT_STORE_BIN: BIN }),
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.equal(run.status, 0, `the walk-through stopped: ${run.stderr}`);

  const statuses = readFileSync(join(dir, 'statuses'), 'utf8').trim().split('\n').map(Number);
  assert.equal(statuses.length, steps.length, 'every curl ran');
  steps.forEach((step, i) => {
    assert.equal(statuses[i], step.status, `step ${i + 1} answered ${statuses[i]}, the README shows ${step.status}: ${step.command}`);
    if (step.body === undefined) return;
    // A body shown with -i follows the response head.
    const raw = readFileSync(join(dir, `body.${i + 1}`), 'latin1');
    const text = raw.startsWith('HTTP/') ? raw.slice(raw.indexOf('\r\n\r\n') + 4) : raw;
    assert.deepEqual(parseExact(Buffer.from(text, 'latin1').toString('utf8')), parseExact(step.body), `step ${i + 1} body: ${step.command}`);
  });
  // Started without WEBHOOK_SECRET_KEYS, the service logs the warning the README quotes, once (not per worker).
  const warnings = server.stdout().split('\n').filter((l) => l.includes('WEBHOOK_SECRET_KEYS is not set'));
  assert.deepEqual(warnings.map((l) => (JSON.parse(l) as { msg: string }).msg), [readmeWarning()], server.stdout());
  server.proc.kill('SIGTERM');
  assert.equal(await server.exited, 0);
});

/** The start-up warning the README quotes: the block after "Every start also logs this warning". */
function readmeWarning(): string {
  const warning = /Every start also logs this warning[^\n]*\n\n```\n(.+)\n```/.exec(README)?.[1];
  assert.ok(warning, 'the README no longer quotes the WEBHOOK_SECRET_KEYS warning');
  return warning;
}

test("the README's command for WEBHOOK_SECRET_KEYS, run as written, makes a key the service takes", (t) => {
  const line = README.split('\n').find((l) => /^export WEBHOOK_SECRET_KEYS=.*openssl rand -base64 32/.test(l));
  assert.ok(line, 'the README gives no command that makes a key');
  assert.match(readmeWarning(), /openssl rand -base64 32/, 'the warning names the fix');
  const run = spawnSync('sh', ['-c', `set -e; ${line}\nexec "$PLANT_STORE_NODE" "$PLANT_STORE_BIN" config`], {
    cwd: tempDir(t),
    env: cleanEnv({ PLANT_STORE_NODE: process.execPath, PLANT_STORE_BIN: BIN }),
    encoding: 'utf8',
    timeout: 20_000,
  });
  assert.equal(run.status, 0, run.stderr);
  assert.match(run.stdout, /^WEBHOOK_SECRET_KEYS=key:[A-Za-z0-9_-]{8}$/m, run.stdout);
});
