#!/usr/bin/env node
// Makes the screenshots of docs/console.md again: starts serve on a new SQLite store in a temporary folder
// (replicated by Litestream to a file replica, a webhook receiver beside it), signs in with the first token it
// prints, and photographs each view in Debian's Chromium at 1280 x 800.
//
//   npm run build && node scripts/console-screenshots.mjs      writes docs/console/*.png
//
// It prints how long the first visit took, from the address opened to the plants listed.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const root = new URL('..', import.meta.url).pathname;
const out = join(root, 'docs', 'console');
const dir = mkdtempSync(join(tmpdir(), 'plant-store-screenshots-'));
mkdirSync(out, { recursive: true });

const receiver = createServer((req, res) => {
  req.resume();
  req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"received":true}'));
});
await new Promise((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const hook = `http://127.0.0.1:${receiver.address().port}/hooks/plants`;

const serve = spawn(process.execPath, [join(root, 'bin', 'plant-store.js'), 'serve'], {
  cwd: dir,
  env: {
    PATH: process.env.PATH,
    HOME: dir,
    DATABASE_URL: `sqlite:${join(dir, 'plant-store.db')}`,
    REPLICA_URL: `file://${join(dir, 'replica')}`,
    REPLICA_SYNC_INTERVAL: '1s',
    WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
    HOST: '127.0.0.1',
    PORT: '0',
    WORKERS: '2',
  },
  stdio: ['ignore', 'pipe', 'pipe'],
});
let printed = '';
serve.stdout.on('data', (d) => (printed += d));
serve.stderr.on('data', (d) => (printed += d));
const stop = () => {
  serve.kill('SIGTERM');
  receiver.close();
};

try {
  const deadline = Date.now() + 30_000;
  let url;
  let token;
  while (!(url && token)) {
    if (Date.now() > deadline || serve.exitCode !== null) throw new Error(`serve did not start:\n${printed}`);
    url = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(printed)?.[1];
    token = /^\s+(pst_[A-Za-z0-9_-]{43})$/m.exec(printed)?.[1];
    await new Promise((r) => setTimeout(r, 100));
  }
  const api = (path, init = {}) =>
    fetch(`${url}${path}`, { ...init, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...init.headers } });
  const webhook = await (await api('/webhooks', { method: 'POST', body: JSON.stringify({ url: hook, description: 'Greenhouse inventory sync' }) })).json();
  const plants = ['Monstera deliciosa', 'Ficus lyrata', 'Calathea orbifolia', 'Pilea peperomioides', 'Strelitzia nicolai', 'Sansevieria trifasciata'];
  for (const [i, name] of plants.entries()) await api('/plants', { method: 'POST', body: JSON.stringify({ id: 10_040 + i, name, tag: i % 2 ? 'tropical' : 'shade' }) });
  await api('/plants/10041', { method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' }, body: '{"tag":"bright"}' });
  await api('/tokens', { method: 'POST', body: JSON.stringify({ name: 'prometheus', scopes: ['metrics:read'] }) });

  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu'] });
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  page.setDefaultTimeout(15_000);
  // How long a first visit takes on loopback: the sign-in page usable, then the first view's rows shown.
  let started = performance.now();
  await page.goto(`${url}/console`);
  await page.getByLabel('API token').waitFor();
  const signInMs = performance.now() - started;
  await page.getByLabel('API token').fill(token);
  started = performance.now();
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Plants', exact: true }).waitFor();
  await page.getByRole('cell', { name: 'Monstera deliciosa' }).waitFor();
  const firstViewMs = performance.now() - started;
  console.log(`sign-in page ready ${signInMs.toFixed(0)} ms after the address was opened; the plants listed ${firstViewMs.toFixed(0)} ms after Sign in`);
  await page.screenshot({ path: join(out, 'plants.png') });

  await page.getByRole('link', { name: 'Events' }).click();
  await page.getByRole('heading', { name: 'Events', exact: true }).waitFor();
  await api('/plants/10045', { method: 'DELETE' });
  await api('/plants', { method: 'POST', body: JSON.stringify({ id: 10_047, name: 'Begonia maculata', tag: 'shade' }) });
  await page.getByRole('cell', { name: '10047' }).first().waitFor();
  await page.getByRole('button', { name: 'Older events' }).click();
  await page.getByRole('cell', { name: '10040' }).first().waitFor();
  await page.screenshot({ path: join(out, 'events.png'), fullPage: true, clip: { x: 0, y: 0, width: 1280, height: 1100 } });

  await page.goto(`${url}/console#webhooks/${webhook.id}`);
  await page.getByText('succeeded').first().waitFor();
  await page.getByRole('button', { name: 'Attempts' }).first().click();
  await page.getByText('Attempt 1 at').first().waitFor();
  await page.screenshot({ path: join(out, 'webhooks.png'), fullPage: true, clip: { x: 0, y: 0, width: 1280, height: 1500 } });

  await page.getByRole('link', { name: 'Tokens' }).click();
  await page.getByRole('cell', { name: 'prometheus' }).waitFor();
  await page.screenshot({ path: join(out, 'tokens.png') });

  await page.getByRole('link', { name: 'Status' }).click();
  await page.getByRole('heading', { name: 'Status', exact: true }).waitFor();
  // Some traffic for the charts: a few seconds of reads and writes.
  for (let i = 0; i < 20; i++) {
    await Promise.all(Array.from({ length: 20 }, (_, j) => api(j % 4 ? `/plants/${10_040 + (j % 8)}` : '/plants?limit=5')));
    await api('/plants', { method: 'POST', body: JSON.stringify({ id: 20_000 + i, name: `Fern ${i}` }) });
    await new Promise((r) => setTimeout(r, 400));
  }
  await page.getByRole('cell', { name: 'synced' }).waitFor();
  await page.screenshot({ path: join(out, 'status.png'), fullPage: true });
  await browser.close();
  console.log(`wrote ${['plants', 'events', 'webhooks', 'tokens', 'status'].map((v) => `docs/console/${v}.png`).join(', ')}`);
} finally {
  stop();
  await new Promise((r) => serve.on('exit', r));
  rmSync(dir, { recursive: true, force: true });
}
