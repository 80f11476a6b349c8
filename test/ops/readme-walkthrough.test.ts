// The README's curl walk-through works as written, in order: its shell block runs against a real `plant-store
// serve` (started in a fresh folder, as a newcomer would, the port the only change). Every curl prints what the
// comments under it show: with -w '\n%{http_code}\n', the body and then the status; with -i, the status line,
// the headers shown among the others (`…` marks those left out) and the body.
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
  /** The lines the README shows under the command, without their `# `. */
  shown: string[];
  /** How the command prints the status: its status line first (-i) or a line of its own after the body (-w). */
  form: 'head' | 'trailer';
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

/** Each curl command (continuation lines joined) with the lines shown in the comments under it. */
function curlSteps(block: string): Step[] {
  const lines = block.split('\n');
  const steps: Step[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!lines[i]!.startsWith('curl ')) continue;
    let command = lines[i]!;
    while (command.endsWith('\\')) command = `${command.slice(0, -1)} ${lines[++i]!.trim()}`;
    const shown = [];
    while (lines[i + 1]?.startsWith('# ')) shown.push(lines[++i]!.slice(2));
    const head = /^HTTP\/1\.1 (\d{3}) /.exec(shown[0] ?? '')?.[1];
    const trailer = /^(\d{3})$/.exec(shown.at(-1) ?? '')?.[1];
    if (head) assert.match(command, /^curl -s -i /, `the README shows a status line under a command without -i: ${command}`);
    else assert.ok(command.startsWith("curl -s -w '\\n%{http_code}\\n' "), `a command that prints no status, or its status is not shown: ${command}`);
    const status = head ?? trailer;
    assert.ok(status, `the README shows no status under: ${command}`);
    // Under -i: the status line, then headers, `…` and the body; under -w: the body, if any, then the status.
    const isBody = (l: string) => l.startsWith('{') || l.startsWith('[');
    if (head) assert.ok(shown.slice(1).every((l) => l === '…' || /^[A-Za-z-]+: /.test(l) || isBody(l)), `${command}: ${shown.join(' | ')}`);
    else assert.ok(shown.length <= 2 && (shown.length === 1 || isBody(shown[0]!)), `${command}: ${shown.join(' | ')}`);
    steps.push({ command, shown, form: head ? 'head' : 'trailer', status: Number(status), body: shown.find((l) => l.startsWith('{') || l.startsWith('[')) });
  }
  return steps;
}

test(`the README's curl walk-through, run as written against a real server (${TEST_STORE}), prints each status and body it shows`, async (t) => {
  const block = walkthroughBlock();
  const steps = curlSteps(block);
  assert.ok(steps.length >= 8, `only ${steps.length} curl commands found`);
  assert.match(block, /npx plant-store token create/, 'the walk-through no longer makes its token');

  const dir = tempDir(t);
  // On SQLite exactly the README's setting: no DATABASE_URL, so server and CLI share ./data/ in the folder.
  const env = TEST_STORE === 'postgres' ? { DATABASE_URL: await freshDatabaseUrl(t) } : {};
  const server = await serveIn(t, dir, { ...env, BOOTSTRAP_TOKEN: 'true' });

  // The block itself, the port aside. What each curl prints is kept for the comparison, and `npx plant-store`
  // is this checkout's command (in a clone npx finds it in node_modules/.bin).
  const script = [
    'set -e',
    'n=0',
    `curl() { n=$((n+1)); command curl "$@" -S > "$WALK/out.$n"; }`,
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

  steps.forEach((step, i) => {
    const out = readFileSync(join(dir, `out.${i + 1}`), 'latin1');
    let status: string;
    let body: string;
    if (step.form === 'head') {
      const end = out.indexOf('\r\n\r\n');
      assert.ok(out.startsWith('HTTP/') && end > 0, `step ${i + 1} printed no head: ${step.command}`);
      const head = out.slice(0, end).split('\r\n');
      assert.equal(head[0], step.shown[0], `step ${i + 1} status line: ${step.command}`);
      status = head[0]!.split(' ')[1]!;
      // Every header shown is one curl prints, in the order shown.
      const shownHeaders = step.shown.slice(1).filter((l) => /^[A-Za-z-]+: /.test(l));
      const printed = head.slice(1).filter((l) => shownHeaders.some((h) => h.toLowerCase() === l.toLowerCase()));
      assert.deepEqual(printed.map((l) => l.toLowerCase()), shownHeaders.map((l) => l.toLowerCase()), `step ${i + 1} headers: ${step.command}`);
      body = out.slice(end + 4);
    } else {
      const m = /^([\s\S]*)\n(\d{3})\n$/.exec(out);
      assert.ok(m, `step ${i + 1} did not print its status on a line of its own after the body: ${JSON.stringify(out)}`);
      status = m[2]!;
      body = m[1]!;
    }
    assert.equal(Number(status), step.status, `step ${i + 1} answered ${status}, the README shows ${step.status}: ${step.command}`);
    if (step.body === undefined) {
      assert.equal(body, '', `step ${i + 1} printed a body the README does not show: ${step.command}`);
      return;
    }
    assert.deepEqual(parseExact(Buffer.from(body, 'latin1').toString('utf8')), parseExact(step.body), `step ${i + 1} body: ${step.command}`);
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
