// `systemctl reload` as docs/deployment.md sets it up: releases in folders, `current` a symlink to the one that
// runs, the unit's ExecStart through `current`, ExecReload sending SIGHUP, PIDFile= naming PID_FILE. A deploy
// switches the link and reloads: the server starts the code now behind the link, which takes over under load, and
// the PID file names the new process before the old one exits (so systemd follows it). A release that cannot start
// leaves the running server serving.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, realpathSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnServer, tempDir } from '../helpers/app.js';
import { databaseWithToken } from '../helpers/cli.js';
import { alive, freePort } from '../helpers/ports.js';
import { assertAcknowledgedStored } from '../helpers/load.js';
import { eventually, within } from '../helpers/sleep.js';
import { assertNothingFailedOrLost, startUsers, subscribedReceiver } from './takeover-support.js';

/** This checkout, which every release folder links to (dist/test/ops/ is three folders below it). */
const CHECKOUT = realpathSync(fileURLToPath(new URL('../../../', import.meta.url)));

/** A release folder: links to this checkout's files, with a bin/ of its own whose command first runs `prelude`. */
function release(dir: string, prelude: string): void {
  mkdirSync(join(dir, 'bin'), { recursive: true });
  for (const entry of readdirSync(CHECKOUT)) if (entry !== 'bin') symlinkSync(join(CHECKOUT, entry), join(dir, entry));
  const command = readFileSync(join(CHECKOUT, 'bin/plant-store.js'), 'utf8').replace(/^(#!.*\n)/, `$1${prelude}\n`);
  writeFileSync(join(dir, 'bin/plant-store.js'), command);
  copyFileSync(join(CHECKOUT, 'bin/node-check.js'), join(dir, 'bin/node-check.js'));
}

/** Points `link` at `target` in one step, as a deploy does (`ln -sfn` is not atomic; a rename is). */
function switchLink(link: string, target: string): void {
  symlinkSync(target, `${link}.next`);
  renameSync(`${link}.next`, link);
}

test('SIGHUP after a deploy switched the link: the code now behind it takes over under load, PID_FILE names it; a release that cannot start changes nothing', async (t) => {
  // The new server is not the test's child: it is stopped here, whatever the test's outcome, before the folders
  // made below go (hooks run in the order they were added).
  let pidFile = '';
  let first = 0;
  const pidNow = () => Number(readFileSync(pidFile, 'utf8').trim());
  t.after(() => {
    const pid = (() => {
      try {
        return pidNow();
      } catch {
        return 0;
      }
    })();
    if (pid !== 0 && pid !== first && alive(pid)) process.kill(pid, 'SIGKILL');
  });
  const root = tempDir(t);
  release(join(root, 'releases/1'), "process.stderr.write('release 1 starting\\n');");
  release(join(root, 'releases/2'), "process.stderr.write('release 2 starting\\n');");
  release(join(root, 'releases/broken'), "process.stderr.write('broken release starting\\n'); process.exit(1);");
  const current = join(root, 'current');
  symlinkSync(join(root, 'releases/1'), current);

  const { databaseUrl, token } = await databaseWithToken(t);
  const rx = await subscribedReceiver(t, databaseUrl);
  const port = await freePort();
  pidFile = join(tempDir(t), 'serve.pid');
  const env = { DATABASE_URL: databaseUrl, PORT: String(port), WORKERS: '1', BOOTSTRAP_TOKEN: 'false', WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', RUNTIME_DIRECTORY: tempDir(t), PID_FILE: pidFile };
  const old = await spawnServer(t, env, { bin: join(current, 'bin/plant-store.js') });
  first = old.proc.pid!;
  assert.equal(pidNow(), first, 'PID_FILE names the server');
  assert.match(old.stderr(), /release 1 starting/);

  const url = `http://127.0.0.1:${port}`;
  const users = startUsers({ port, token, writers: 4, streamReaders: 1, pauseMs: 20, firstId: 1n });
  const writes = async (n: number, what: string) => {
    const from = users.writes.ok.size;
    await eventually(() => users.writes.ok.size >= from + n, `${n} writes acknowledged ${what}`, 30_000, 20);
  };
  await writes(50, 'before the reloads');

  switchLink(current, join(root, 'releases/broken'));
  old.proc.kill('SIGHUP');
  await eventually(() => old.stdout().includes('reload failed: the new server stopped before it took over'), 'the failed reload said', 15_000);
  assert.match(old.stderr(), /broken release starting/, "the broken release's own output reaches the server's");
  await writes(50, 'after the failed reload');
  assert.equal(old.proc.exitCode, null, 'the server still runs');
  assert.equal(pidNow(), old.proc.pid);

  switchLink(current, join(root, 'releases/2'));
  old.proc.kill('SIGHUP');
  assert.equal(await within(old.exited, 30_000, 'still running'), 0, `the old server exits 0:\n${old.stdout()}\n${old.stderr()}`);
  assert.match(old.stderr(), /release 2 starting/, 'the code behind the switched link started');
  await eventually(() => old.stdout().includes('took over: the previous server handed over and stopped'), 'the new server saying it took over', 10_000);
  const next = pidNow();
  assert.notEqual(next, old.proc.pid, 'PID_FILE names the new server');
  assert.ok(alive(next), 'the server PID_FILE names runs');
  await writes(50, 'after the reload');
  await users.stop(url);
  t.diagnostic(await assertNothingFailedOrLost(users, url, token, rx));
  t.diagnostic(await assertAcknowledgedStored(databaseUrl, users.writes));
});
