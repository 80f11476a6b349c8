// The console's Webhooks view in Chromium, from the user's side, against a real server whose dispatcher runs and a
// real receiver on 127.0.0.1: a subscription made from the form, its secret shown once; a plant's delivery and its
// attempt with the request sent and the receiver's answer as text; Resend reaching the receiver again; Recover;
// delete after confirmation; the chart's caption. At 390 px nothing scrolls sideways, and a token without
// webhooks:manage is told what it lacks. axe-core finds no serious or critical violation.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startApp } from '../helpers/app.js';
import { clientFor } from '../helpers/client.js';
import { startReceiver, type Reply } from '../helpers/receiver.js';
import { subscribe } from '../helpers/webhooks.js';
import { eventually } from '../helpers/sleep.js';
import { openConsole, violations } from './kit.js';

test('Webhooks in Chromium: subscribe from the form, read the secret once, see the attempt, Resend, Recover, delete', { timeout: 120_000 }, async (t) => {
  const s = await startApp(t, { config: { webhookAllowedHosts: ['127.0.0.1'] } });
  const token = (await s.tokens.create({ name: 'console', scopes: ['webhooks:manage', 'plants:read', 'plants:write'] })).secret;
  const hook = { secret: '' };
  // The first answer is a refusal held off for an hour, so that the delivery waits for Resend; then thanks.
  const rx = await startReceiver(t, () => hook.secret, (_req, n): Reply =>
    n === 0
      ? { status: 503, headers: { 'retry-after': '3600', 'content-type': 'text/plain' }, body: '<b>busy</b>, try later' }
      : { status: 200, headers: { 'content-type': 'text/plain' }, body: 'thanks, got it' },
  );
  t.after(() => assert.deepEqual(rx.problems, [], 'every delivery verifies with the secret the page showed'));
  const w = await openConsole(t, s.url, { token });
  const page = w.page;

  await page.getByRole('link', { name: 'Webhooks' }).click();
  await page.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();
  await page.getByText('No subscriptions yet.').waitFor();
  await page.getByRole('button', { name: 'New subscription' }).click();
  const form = page.getByRole('form', { name: 'New subscription' });
  await form.getByLabel('URL').fill(rx.url);
  for (const type of ['newPlant', 'plantUpdated', 'plantDeleted']) assert.equal(await form.getByRole('checkbox', { name: type }).isChecked(), true);
  await form.getByRole('checkbox', { name: 'plantDeleted' }).uncheck();
  assert.equal(await form.getByLabel('Format').inputValue(), 'plain');
  await form.getByLabel('Description').fill('greenhouse sync');
  await form.getByRole('button', { name: 'Create' }).click();

  const shown = page.getByRole('region', { name: 'Signing secret' });
  hook.secret = await shown.locator('code').innerText();
  assert.match(hook.secret, /^whsec_/);
  assert.match(await shown.innerText(), /will not be shown again/);
  const row = page.getByRole('row').filter({ hasText: rx.url });
  assert.match(await row.innerText(), /newPlant, plantUpdated\s+plain\s+active/);
  assert.deepEqual(await violations(page), [], 'the subscriptions with the secret shown');

  await shown.getByRole('link', { name: 'See its deliveries' }).click();
  await page.getByRole('heading', { name: rx.url }).waitFor();
  assert.match(page.url(), /#webhooks\/wh_/);
  assert.equal(await page.getByRole('region', { name: 'Signing secret' }).count(), 0, 'the secret is shown once');
  await page.getByText('No deliveries yet.').waitFor();

  assert.equal((await s.postPlant({ id: 1, name: 'Monstera' })).status, 200);
  await rx.until((r) => r.requests.length === 1);
  const eventId = String(rx.requests[0]!.headers['webhook-id']);
  const delivery = page.getByRole('listitem').filter({ has: page.getByRole('heading', { name: eventId }) });
  await delivery.getByText(/pending, created .*, next attempt .*, 1 attempt$/).waitFor();
  await delivery.getByRole('button', { name: 'Attempts' }).click();
  const first = delivery.getByRole('listitem').filter({ has: page.getByRole('heading', { name: /^Attempt 1 at / }) });
  const firstText = await first.innerText();
  assert.match(firstText, /Status code\s+503/);
  assert.match(firstText, /Error\s+HTTP 503/);
  assert.ok(firstText.includes(`webhook-id: ${eventId}`), firstText);
  assert.ok(firstText.includes(rx.requests[0]!.body), 'the request body as sent');
  assert.ok(firstText.includes('retry-after: 3600'), 'the answer headers');
  // The receiver's HTML is its text.
  assert.equal(await first.locator('pre', { hasText: '<b>busy</b>, try later' }).count(), 1);
  assert.equal(await first.locator('b').count(), 0);
  assert.deepEqual(await violations(page), [], 'a delivery with its attempt open');

  await delivery.getByRole('button', { name: 'Resend' }).click();
  await rx.until((r) => r.requests.length === 2);
  assert.equal(rx.requests[1]!.headers['webhook-id'], eventId);
  await delivery.getByText(/succeeded, created .*, 2 attempts$/).waitFor();
  const second = delivery.getByRole('listitem').filter({ has: page.getByRole('heading', { name: /^Attempt 2 at / }) });
  assert.match(await second.innerText(), /Status code\s+200[\s\S]*thanks, got it/);

  const caption = await page.getByRole('figure').locator('figcaption').innerText();
  assert.match(caption, /Delivery attempts per minute, last hour\s+Succeeded: \d+; Failed: \d+/);
  await page.getByText('Attempts in the last hour, of the deliveries shown: 1 succeeded, 1 failed.').waitFor();

  const recover = page.getByRole('form', { name: 'Recover deliveries' });
  assert.match(await recover.getByLabel('Since').inputValue(), /^\d{4}-\d\d-\d\dT\d\d:\d\d$/);
  await recover.getByRole('button', { name: 'Recover' }).click();
  await page.getByRole('status').getByText('Recover queued 0 failed or cancelled deliveries.').waitFor();

  await page.getByRole('button', { name: 'Delete subscription' }).click();
  await page.getByRole('group', { name: 'Confirm delete' }).getByRole('button', { name: 'Yes, delete it' }).click();
  await page.getByText('No subscriptions yet.').waitFor();
  const { data } = await clientFor(s, token).GET('/webhooks');
  assert.deepEqual(data, []);
  assert.deepEqual(w.problems, []);
  assert.deepEqual(w.elsewhere(), []);
});

test('Webhooks at 390 px: long URLs and headers wrap, the attempt opens by keyboard; a token without webhooks:manage is told so, one without plants:read is offered no New subscription', { timeout: 120_000 }, async (t) => {
  const s = await startApp(t, { config: { webhookAllowedHosts: ['127.0.0.1'] } });
  const token = (await s.tokens.create({ name: 'console', scopes: ['webhooks:manage', 'plants:read'] })).secret;
  const hook = { url: '', secret: '' };
  const rx = await startReceiver(t, () => hook.secret, () => ({ status: 200, headers: { 'x-long': 'z'.repeat(200) }, body: 'y'.repeat(600) }));
  hook.url = `${rx.url}/${'long-path-segment'.repeat(12)}`;
  const sub = await subscribe(clientFor(s, token), hook);
  assert.equal((await s.postPlant({ id: 2, name: 'a'.repeat(200) })).status, 200);
  await rx.until((r) => r.requests.length === 1);

  const w = await openConsole(t, s.url, { token, width: 390 });
  const page = w.page;
  await page.goto(`${s.url}/console#webhooks/${sub.id}`);
  await page.getByRole('heading', { name: hook.url }).waitFor();
  const attempts = page.getByRole('button', { name: 'Attempts' });
  await eventually(async () => /succeeded/.test(await page.getByRole('listitem').first().innerText()), 'the delivery succeeded', 10_000, 100);
  await attempts.focus();
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: /^Attempt 1 at / }).waitFor();
  assert.equal(await attempts.getAttribute('aria-expanded'), 'true');
  const widths = await page.evaluate(() => {
    const root = (globalThis as unknown as { document: { documentElement: { scrollWidth: number; clientWidth: number } } }).document.documentElement;
    return [root.scrollWidth, root.clientWidth];
  });
  assert.ok(widths[0]! <= widths[1]!, `no sideways scroll at 390 px: ${widths.join(' > ')}`);
  assert.deepEqual(await violations(page), [], 'a subscription at 390 px');
  assert.deepEqual(w.problems, []);

  // Without webhooks:manage the view says what the token lacks and offers nothing.
  const reader = (await s.tokens.create({ name: 'reader', scopes: ['plants:read'] })).secret;
  const r = await openConsole(t, s.url, { token: reader, width: 390, browser: w.browser });
  await r.page.getByRole('link', { name: 'Webhooks' }).click();
  await r.page.getByText(/webhooks:manage/).first().waitFor();
  assert.equal(await r.page.getByRole('button', { name: 'New subscription' }).count(), 0);
  assert.deepEqual(await violations(r.page), [], 'Webhooks without webhooks:manage');

  // With webhooks:manage but not plants:read, the subscriptions show and no New subscription is offered.
  const manager = (await s.tokens.create({ name: 'manager', scopes: ['webhooks:manage'] })).secret;
  const m = await openConsole(t, s.url, { token: manager, width: 390, browser: w.browser });
  await m.page.getByRole('link', { name: 'Webhooks' }).click();
  await m.page.getByRole('link', { name: hook.url }).waitFor();
  await m.page.getByText(/also needs the plants:read scope/).waitFor();
  assert.equal(await m.page.getByRole('button', { name: 'New subscription' }).count(), 0);
  assert.deepEqual([...r.problems, ...m.problems], []);
});
