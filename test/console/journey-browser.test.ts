// The new user, end to end: serve started as the README starts it, on a new SQLite store replicated to a
// file replica; the token it prints; and, reading nothing else, the console: a plant created from the form, its
// event arriving live in another tab's Events view, a local receiver subscribed, its delivery and attempt seen,
// resent, a token made and revoked, and the replica's lag read from its chart. SQLite only: replication is.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { BIN, listeningUrl, tempDir } from '../helpers/app.js';
import { cleanEnv } from '../helpers/cli.js';
import { startReceiver } from '../helpers/receiver.js';
import { eventually } from '../helpers/sleep.js';
import { openConsole } from './kit.js';

test('a new user: the printed token, a plant, its event live, a webhook delivered and resent, a token revoked, the replication lag on a chart', { timeout: 120_000 }, async (t) => {
  const dir = tempDir(t);
  const serve = spawn(process.execPath, [BIN, 'serve'], {
    cwd: dir,
    env: cleanEnv({ PORT: '0', HOST: '127.0.0.1', DATABASE_URL: `sqlite:${join(dir, 'plant-store.db')}`, REPLICA_URL: `file://${join(dir, 'replica')}`, REPLICA_SYNC_INTERVAL: '1s', WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  serve.stdout.on('data', (d: Buffer) => (out += d.toString()));
  serve.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise((resolve) => serve.on('exit', resolve));
  t.after(async () => {
    serve.kill('SIGTERM');
    await exited;
  });
  const url = await listeningUrl(serve, () => out);
  const token = await eventually(() => /^\s+(pst_[A-Za-z0-9_-]{43})$/m.exec(out)?.[1], 'the first token printed', 10_000, 25);
  const api = (path: string, secret = token) => fetch(`${url}${path}`, { headers: { authorization: `Bearer ${secret}` } });
  const hook = { secret: '' };
  const rx = await startReceiver(t, () => hook.secret);
  t.after(() => assert.deepEqual(rx.problems, [], 'every delivery verifies with the secret the page showed'));

  // One tab watches events live; the other does the work.
  const watcher = await openConsole(t, url, { token });
  await watcher.page.getByRole('link', { name: 'Events' }).click();
  await watcher.page.getByText('Live: new events appear as they happen.').waitFor();
  const worker = await openConsole(t, url, { token, browser: watcher.browser });
  const page = worker.page;

  await page.getByRole('button', { name: 'New plant' }).click();
  const form = page.getByRole('form', { name: 'New plant' });
  await form.getByLabel('ID').fill('42');
  await form.getByLabel('Name').fill('Monstera deliciosa');
  await form.getByRole('button', { name: 'Create' }).click();
  await page.getByRole('cell', { name: 'Monstera deliciosa' }).waitFor();
  const live = watcher.page.getByRole('row').filter({ hasText: 'newPlant' }).filter({ hasText: '42' });
  await live.waitFor();

  // A local receiver, subscribed from the form; its secret, shown once, verifies what it gets.
  await page.getByRole('link', { name: 'Webhooks' }).click();
  await page.getByRole('button', { name: 'New subscription' }).click();
  const sub = page.getByRole('form', { name: 'New subscription' });
  await sub.getByLabel('URL').fill(rx.url);
  await sub.getByRole('button', { name: 'Create' }).click();
  const shown = page.getByRole('region', { name: 'Signing secret' });
  hook.secret = await shown.locator('code').innerText();
  await shown.getByRole('link', { name: 'See its deliveries' }).click();
  await page.getByRole('heading', { name: rx.url }).waitFor();
  await page.getByRole('link', { name: 'Plants' }).click();
  await page.getByRole('button', { name: 'New plant' }).click();
  await form.getByLabel('ID').fill('43');
  await form.getByLabel('Name').fill('Ficus lyrata');
  await form.getByRole('button', { name: 'Create' }).click();
  await rx.until((r) => r.requests.length === 1);
  const eventId = String(rx.requests[0]!.headers['webhook-id']);
  await page.goBack();
  await page.getByRole('heading', { name: rx.url }).waitFor();
  const delivery = page.getByRole('listitem').filter({ has: page.getByRole('heading', { name: eventId }) });
  await delivery.getByText(/^succeeded, .*1 attempt$/).waitFor();
  await delivery.getByRole('button', { name: 'Attempts' }).click();
  await delivery.getByText('Attempt 1 at').waitFor();
  await delivery.getByRole('button', { name: 'Resend' }).click();
  await rx.until((r) => r.requests.length === 2);
  assert.equal(rx.requests[1]!.headers['webhook-id'], eventId, 'the same event, sent again');
  await delivery.getByText(/^succeeded, .*2 attempts$/).waitFor();

  // A token made and revoked: refused from then on.
  await page.getByRole('link', { name: 'Tokens' }).click();
  await page.getByRole('button', { name: 'New token' }).click();
  const made = page.getByRole('form', { name: 'New token' });
  await made.getByLabel('Name').fill('greenhouse reader');
  await made.getByRole('checkbox', { name: 'plants:read' }).check();
  await made.getByRole('button', { name: 'Create' }).click();
  const secret = await page.getByRole('region', { name: 'New token secret' }).locator('code').innerText();
  assert.equal((await api('/plants/42', secret)).status, 200);
  const row = page.getByRole('row').filter({ hasText: 'greenhouse reader' });
  await row.getByRole('button', { name: 'Revoke' }).click();
  await row.getByRole('group', { name: 'Confirm revoke' }).getByRole('button', { name: 'Yes, revoke it' }).click();
  await eventually(async () => (await api('/plants/42', secret)).status === 401, 'the revoked token refused', 10_000, 100);

  // The replica's lag, read from its chart.
  await page.getByRole('link', { name: 'Status' }).click();
  const lag = page.getByRole('figure', { name: /Replication lag/ });
  await eventually(async () => /file: \d+\.\d s/.test(await lag.innerText()), 'the lag on its chart', 20_000, 100);

  assert.deepEqual([...watcher.problems, ...worker.problems], []);
  assert.deepEqual([...watcher.elsewhere(), ...worker.elsewhere()], []);
});
