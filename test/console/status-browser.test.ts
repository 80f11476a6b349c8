// The Status view in Chromium, as an operator reads it: the version, the workers and the store; a chart of
// requests per second that moves with the traffic; on a replicated SQLite store (Litestream to a file replica),
// the replica's state and its lag on a chart. A token without metrics:read is told what it lacks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startApp, tempDir } from '../helpers/app.js';
import { capturedLogger } from '../helpers/log-lines.js';
import { VERSION } from '../../src/health/version.js';
import { databaseFile } from '../../src/storage/engines.js';
import { parseReplicaUrls } from '../../src/replication/replica-urls.js';
import { createReplication } from '../../src/replication/supervisor.js';
import { eventually } from '../helpers/sleep.js';
import { openConsole, violations } from './kit.js';

test('Status: version, workers and store; requests per second drawn live; a replica and its lag on a chart (SQLite); no metrics:read, no status', { timeout: 90_000 }, async (t) => {
  const sqlite = process.env.PLANT_STORE_TEST_STORE !== 'postgres';
  const replicas = sqlite ? parseReplicaUrls(`file://${join(tempDir(t), 'replica')}`) : [];
  const s = await startApp(t, { config: { replicaUrls: replicas } });
  if (sqlite) {
    const replication = createReplication({ database: databaseFile(s.databaseUrl)!, replicas, syncIntervalMs: 1_000, env: { PATH: process.env.PATH ?? '' }, logger: capturedLogger('warn').logger });
    t.after(() => replication.stop());
    await replication.start();
    replication.register(s.app.metrics.registry);
  }
  const ops = (await s.tokens.create({ name: 'ops', scopes: ['metrics:read'] })).secret;
  const { page, problems, elsewhere, browser } = await openConsole(t, s.url, { token: ops });
  await page.getByRole('link', { name: 'Status' }).click();
  await page.getByRole('heading', { name: 'Status' }).waitFor();
  const facts = page.getByRole('definition');
  await facts.first().waitFor();
  assert.equal(await facts.nth(0).innerText(), VERSION);
  assert.equal(await facts.nth(2).innerText(), '1');
  assert.match(await facts.nth(3).innerText(), sqlite ? /^SQLite, [\d.]+ (bytes|KB|MB)$/ : /^PostgreSQL, [\d.]+ (KB|MB|GB)$/);

  // Traffic: the chart's caption gives the latest requests per second of each class.
  const requests = page.getByRole('figure', { name: /Requests per second/ });
  for (let i = 0; i < 40; i++) await fetch(`${s.url}/plants/${i}`, { headers: { authorization: `Bearer ${s.token.read}` } });
  // Polled from the test: the page's policy (no eval) refuses a function run in it.
  await eventually(async () => /4xx: [1-9]/.test(await requests.innerText()), 'requests counted on the chart', 15_000, 100);
  assert.match(await requests.innerText(), /2xx: [\d.]+\/s; 3xx: [\d.]+\/s; 4xx: [\d.]+\/s; 5xx: [\d.]+\/s/);
  assert.equal(await page.locator('figure canvas').count() >= 4, true, 'the charts are drawn');

  if (sqlite) {
    const row = page.getByRole('row', { name: /^file / });
    await row.waitFor();
    await page.getByRole('cell', { name: 'synced' }).waitFor({ timeout: 20_000 });
    const lag = page.getByRole('figure', { name: /Replication lag/ });
    await lag.waitFor();
    await eventually(async () => /file: \d+\.\d s/.test(await lag.innerText()), 'the lag on its chart', 15_000, 100);
  }
  assert.deepEqual(await violations(page), [], 'the status view');

  // At 390 pixels wide nothing scrolls sideways, once the page has followed the new width (the charts redraw
  // when their box is resized, a frame later).
  await page.setViewportSize({ width: 390, height: 844 });
  await eventually(async () => ((await page.evaluate('document.documentElement.scrollWidth')) as number) <= 390, 'the view fits 390 pixels', 5_000, 50);
  assert.deepEqual(problems, []);
  assert.deepEqual(elsewhere(), []);

  // A token that may not read metrics is told so, and asks nothing.
  const { page: other } = await openConsole(t, s.url, { token: s.token.all, browser });
  await other.getByRole('link', { name: 'Status' }).click();
  await other.getByText('needs the scope metrics:read').waitFor();
});
