// Upgrade by takeover, from the users' side: `plant-store serve` started with the DATABASE_URL, HOST and PORT of
// a running server takes over from it while writers, readers, resuming stream readers and a webhook receiver keep
// going. Nothing fails (no 5xx, 429, reset or refused connection), no acknowledged write is lost, no event is
// missed or repeated, every event is delivered once; the old server exits 0. A takeover that cannot start leaves
// the running server serving.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawnServer, tempDir, type ChildServer } from '../helpers/app.js';
import { databaseWithToken } from '../helpers/cli.js';
import { freePort } from '../helpers/ports.js';
import { assertAcknowledgedStored } from '../helpers/load.js';
import { eventually, within } from '../helpers/sleep.js';
import { assertNothingFailedOrLost, startUsers, subscribedReceiver } from './takeover-support.js';

const TOOK_OVER = '"msg":"took over: the previous server handed over and stopped"';

async function scene(t: TestContext) {
  const { databaseUrl, token } = await databaseWithToken(t);
  const rx = await subscribedReceiver(t, databaseUrl);
  const port = await freePort();
  const env = {
    DATABASE_URL: databaseUrl,
    PORT: String(port),
    BOOTSTRAP_TOKEN: 'false',
    WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
    RUNTIME_DIRECTORY: tempDir(t),
    SHUTDOWN_TIMEOUT_MS: '10000',
  };
  return { databaseUrl, token, rx, port, env, url: `http://127.0.0.1:${port}` };
}

/** Waits until the users have had `n` more writes acknowledged. */
async function moreWrites(users: { writes: { ok: Map<bigint, number> } }, n: number, what: string): Promise<void> {
  const from = users.writes.ok.size;
  await eventually(() => users.writes.ok.size >= from + n, `${n} writes acknowledged ${what}`, 30_000, 20);
}

async function takeoverUnderLoad(t: TestContext, oldWorkers: string, newWorkers: string) {
  const s = await scene(t);
  const old = await spawnServer(t, { ...s.env, WORKERS: oldWorkers });
  const users = startUsers({ port: s.port, token: s.token, writers: 6, streamReaders: 2, pauseMs: 20, firstId: 1n });
  await moreWrites(users, 100, 'before the takeover');
  const started = Date.now();
  const next: ChildServer = await spawnServer(t, { ...s.env, WORKERS: newWorkers });
  assert.equal(await within(old.exited, 30_000, 'still running'), 0, `the old server exits 0:\n${old.stdout()}\n${old.stderr()}`);
  await eventually(() => next.stdout().includes(TOOK_OVER), 'the new server saying it took over', 10_000);
  t.diagnostic(`start to handover done: ${Date.now() - started} ms`);
  await moreWrites(users, 100, 'after the takeover');
  await users.stop(s.url);
  assert.ok(old.stdout().includes('"msg":"handed over"'), 'the old server says it handed over');
  assert.ok(!old.stdout().includes('SHUTTING_DOWN'), 'no request was refused while handing over');
  t.diagnostic(await assertNothingFailedOrLost(users, s.url, s.token, s.rx));
  t.diagnostic(await assertAcknowledgedStored(s.databaseUrl, users.writes));
  // Every stream reader was moved over: its stream on the old server ended, and it resumed on the new one.
  for (const stream of users.streams) assert.ok(stream.streams >= 2, `a stream reader opened ${stream.streams} streams`);
}

test('a server started with the same settings takes over under load: one process to two workers', async (t) => {
  await takeoverUnderLoad(t, '1', '2');
});

test('a server started with the same settings takes over under load: two workers to one process', async (t) => {
  await takeoverUnderLoad(t, '2', '1');
});

test('a takeover that cannot start leaves the running server serving, and says why; a good one then takes over', async (t) => {
  const s = await scene(t);
  const key = (byte: number) => `${Buffer.alloc(32, byte).toString('base64')}`;
  // The running server encrypts the webhook secret under its key; the new one is started without that key.
  const old = await spawnServer(t, { ...s.env, WORKERS: '1', WEBHOOK_SECRET_KEYS: key(1) });
  const users = startUsers({ port: s.port, token: s.token, writers: 2, streamReaders: 1, pauseMs: 20, firstId: 1n });
  await moreWrites(users, 20, 'before the failed takeover');
  const failed = await spawnServer(t, { ...s.env, WORKERS: '1', WEBHOOK_SECRET_KEYS: key(2) }).then(
    () => assert.fail('a server without the key started'),
    (err: Error) => err.message,
  );
  assert.match(failed, /a server with these settings is running: this one takes over from it once ready/);
  assert.match(failed, /WEBHOOK_SECRET_KEYS/, 'the failed server says why');
  await moreWrites(users, 20, 'after the failed takeover');
  assert.equal(old.proc.exitCode, null, 'the running server still runs');
  assert.ok(!old.stdout().includes('handing over'), 'the running server was never told to hand over');

  const next = await spawnServer(t, { ...s.env, WORKERS: '1', WEBHOOK_SECRET_KEYS: key(1) });
  assert.equal(await within(old.exited, 30_000, 'still running'), 0);
  await eventually(() => next.stdout().includes(TOOK_OVER), 'the good server taking over', 10_000);
  await moreWrites(users, 20, 'after the takeover');
  await users.stop(s.url);
  t.diagnostic(await assertNothingFailedOrLost(users, s.url, s.token, s.rx));
  t.diagnostic(await assertAcknowledgedStored(s.databaseUrl, users.writes));
});

test('a server killed with -9 leaves its control socket behind: the next one on its settings starts as usual, and can be taken over', async (t) => {
  const s = await scene(t);
  const killed = await spawnServer(t, { ...s.env, WORKERS: '1' });
  killed.proc.kill('SIGKILL');
  await killed.exited;
  const next = await spawnServer(t, { ...s.env, WORKERS: '1' });
  assert.ok(!next.stdout().includes('takes over'), 'nothing to take over from');
  const res = await fetch(`${s.url}/plants`, { headers: { authorization: `Bearer ${s.token}` } });
  assert.equal(res.status, 200);
  const last = await spawnServer(t, { ...s.env, WORKERS: '1' });
  assert.equal(await within(next.exited, 30_000, 'still running'), 0);
  await eventually(() => last.stdout().includes(TOOK_OVER), 'the last server taking over', 10_000);
});
