// The Node.js lines plant-store supports, each run for real: `plant-store serve` on Node.js 22 and 24 (from the npm
// registry's node package, scripts/runtimes.mjs) starts, acknowledges a durable create, exits 0 on SIGTERM without a
// native assertion, and finds the plant again on the next start. On Node.js 20 it refuses to start, saying why.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BIN, spawnServer, tempDir, type ChildServer } from '../helpers/app.js';
import { TEST_STORE } from '../helpers/test-store.js';
import { postRaw } from '../helpers/raw-request.js';
import { databaseWithToken, portOf } from '../helpers/cli.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
// Installs the lines that are missing (into .runtimes/, once); `npm test` has done it before the suite starts.
const executables = JSON.parse(
  execFileSync(process.execPath, [join(ROOT, 'scripts/runtimes.mjs')], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }),
) as Record<string, string>;

// What a native abort looks like: the assertion better-sqlite3 12 hit on Node.js 24, V8's fatal errors, signals.
const NATIVE_FAILURE = /Assertion failed|FATAL ERROR|Aborted|core dumped|Segmentation fault|node::[A-Za-z]+::/;

async function stop(server: ChildServer): Promise<number | string> {
  server.proc.kill('SIGTERM');
  const timeout = new Promise<string>((resolve) => setTimeout(() => resolve('still running 15 s after SIGTERM'), 15_000).unref());
  return Promise.race([server.exited, timeout]);
}

for (const line of ['22', '24']) {
  test(`Node.js ${line} on ${TEST_STORE}: serve starts, keeps a durable create across a restart, and exits 0 on SIGTERM with no native assertion`, async (t) => {
    const node = executables[line]!;
    assert.match(execFileSync(node, ['--version'], { encoding: 'utf8' }), new RegExp(`^v${line}\\.`));
    const { databaseUrl, token } = await databaseWithToken(t);
    const env = { DATABASE_URL: databaseUrl, BOOTSTRAP_TOKEN: 'false' };
    const id = 9223372036854775807n - BigInt(line);

    const first = await spawnServer(t, env, { node });
    const listening = first.stdout().split('\n').find((l) => l.includes('plant-store is listening'));
    assert.equal(JSON.parse(listening!).node, execFileSync(node, ['--version'], { encoding: 'utf8' }).trim());
    const created = await postRaw(portOf(first.url), token, `{"id":${id},"name":"Node ${line}"}`);
    assert.equal(created.kind === 'response' && created.status, 200, JSON.stringify(created));
    assert.equal(await stop(first), 0, first.stderr());
    assert.doesNotMatch(first.stdout() + first.stderr(), NATIVE_FAILURE);

    const second = await spawnServer(t, env, { node });
    const read = await fetch(`${second.url}/plants/${id}`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(read.status, 200);
    assert.match(await read.text(), new RegExp(`"id":${id}[,}]`));
    assert.equal(await stop(second), 0, second.stderr());
    assert.doesNotMatch(second.stdout() + second.stderr(), NATIVE_FAILURE);
  });
}

test('Node.js 20: plant-store refuses to start with exit 1 and a message naming the supported lines, and touches no database', (t) => {
  const node = executables['20']!;
  const dir = tempDir(t);
  const file = join(dir, 'never.db');
  const r = execFileResult(node, [BIN, 'serve'], { DATABASE_URL: `sqlite:${file}`, PORT: '0' });
  assert.equal(r.code, 1);
  assert.equal(r.stdout, '');
  assert.match(r.stderr, /^plant-store needs Node\.js 22 or newer \(tested on 22 and 24\); this is Node\.js 20\.\d+\.\d+\./);
  assert.match(r.stderr, /npm start/);
  assert.doesNotMatch(r.stderr, NATIVE_FAILURE);
  assert.equal(existsSync(file), false);
  // The other commands refuse the same way.
  const refused = execFileResult(node, [BIN, 'token', 'list'], { DATABASE_URL: `sqlite:${file}` });
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /needs Node\.js 22 or newer/);
  assert.equal(existsSync(file), false);
});

function execFileResult(file: string, args: string[], env: Record<string, string>): { code: number; stdout: string; stderr: string } {
  try {
    const stdout = execFileSync(file, args, { env: { ...process.env, ...env }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 20_000 });
    return { code: 0, stdout, stderr: '' };
  } catch (e) {
    const err = e as { status: number | null; stdout: string; stderr: string };
    return { code: err.status ?? -1, stdout: err.stdout, stderr: err.stderr };
  }
}
