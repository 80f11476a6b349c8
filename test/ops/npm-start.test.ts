// `npm start` (what a newcomer runs, and what a supervisor might be pointed at) stops with the server: SIGTERM
// to npm reaches the server, which drains and exits 0, and no server is left behind answering /healthz.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { killGroupAfter, refused } from '../helpers/ports.js';
import { eventually, within } from '../helpers/sleep.js';
import { listeningUrl } from '../helpers/app.js';
import { freshDatabaseUrl } from '../helpers/test-store.js';
import { cleanEnv, portOf } from '../helpers/cli.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

test('SIGTERM to npm start stops the server too: it logs the drain, npm exits, the port is closed', async (t) => {
  const env = cleanEnv({ PORT: '0', DATABASE_URL: await freshDatabaseUrl(t), BOOTSTRAP_TOKEN: 'false', npm_config_update_notifier: 'false' });
  const npm = spawn('npm', ['start'], { cwd: ROOT, env, detached: true });
  killGroupAfter(t, npm);
  let out = '';
  npm.stdout.on('data', (d: Buffer) => (out += d.toString()));
  npm.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | string>((resolve) => npm.on('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  const port = portOf(await listeningUrl(npm, () => out, 30_000));
  assert.equal((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200);

  npm.kill('SIGTERM');
  const code = await within(exited, 15_000, 'npm still running 15 s after SIGTERM');
  assert.notEqual(code, 'npm still running 15 s after SIGTERM');
  await eventually(() => /"msg":"stopped"/.test(out), () => `the server logging "stopped"${/"msg":"shutting down/.test(out) ? '' : ' (it never got the signal)'}:\n${out}`);
  assert.match(out, /"signal":"SIGTERM","msg":"shutting down/, 'the server never got the signal');
  assert.ok(await refused(port), 'a server is left answering after npm start was stopped');
});
