// The console's Tokens view in Chromium, as an operator meets it: signed in with a token that may manage tokens,
// they make a plants:read token (only the scopes they hold are offered), read its secret once, check it reads and
// cannot write, then revoke it after confirmation and see it refused once the cache's time has passed. axe-core
// finds no serious or critical violation on the view. The view of a token without tokens:manage is in
// console-browser.test.ts (least privilege at 390 pixels).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startApp } from '../helpers/app.js';
import { eventually } from '../helpers/sleep.js';
import { openConsole, violations } from './kit.js';

const SECRET = /^pst_[A-Za-z0-9_-]{43}$/;

test('the Tokens view: make a plants:read token, its secret shown once, then revoke it after confirmation', { timeout: 120_000 }, async (t) => {
  const s = await startApp(t);
  const admin = await s.tokens.create({ name: 'console admin', scopes: ['tokens:manage', 'plants:read', 'plants:write'] });
  const { page, problems, elsewhere } = await openConsole(t, s.url, { token: admin.secret });
  await page.getByRole('link', { name: 'Tokens' }).click();
  await page.getByRole('heading', { name: 'Tokens' }).waitFor();
  await page.getByRole('cell', { name: admin.token.id, exact: true }).waitFor();

  await page.getByRole('button', { name: 'New token' }).click();
  const form = page.getByRole('form', { name: 'New token' });
  // Only what the signed-in token holds is offered.
  assert.deepEqual(await form.locator('label.check').allInnerTexts(), ['plants:read', 'plants:write', 'tokens:manage']);
  assert.deepEqual(await violations(page), [], 'the tokens view with its form');
  await form.getByLabel('Name').fill('greenhouse reader');
  await form.getByRole('checkbox', { name: 'plants:read' }).check();
  await form.getByRole('button', { name: 'Create' }).click();

  const shown = page.getByRole('region', { name: 'New token secret' });
  await shown.waitFor();
  assert.match(await shown.innerText(), /will not be shown again/);
  const secret = (await shown.locator('code').innerText()).trim();
  assert.match(secret, SECRET);
  const asReader = (method: string, path: string, body?: string) =>
    fetch(`${s.url}${path}`, { method, headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' }, body });
  assert.equal((await asReader('GET', '/plants')).status, 200, 'the new token reads plants');
  assert.equal((await asReader('POST', '/plants', '{"id":1,"name":"fern"}')).status, 403, 'and cannot write');
  await shown.getByRole('button', { name: 'Done' }).click();
  assert.ok(!(await page.content()).includes(secret), 'the secret is gone from the page');

  const made = (await s.tokens.list()).find((x) => x.name === 'greenhouse reader')!;
  const row = page.getByRole('row').filter({ hasText: made.id });
  assert.match(await row.innerText(), /plants:read/);
  await row.getByRole('button', { name: 'Revoke' }).click();
  await row.getByRole('group', { name: 'Confirm revoke' }).getByRole('button', { name: 'Yes, revoke it' }).click();
  // The Revoked column (the seventh) shows when, instead of "no".
  await eventually(async () => /UTC$/.test(await row.getByRole('cell').nth(6).innerText()), 'the row shows when it was revoked', 10_000, 50);
  assert.equal(await row.getByRole('button').count(), 0, 'a revoked token offers no action');
  // Refused once TOKEN_CACHE_TTL_MS has passed, on every process.
  await eventually(async () => (await asReader('GET', '/plants')).status === 401, 'the revoked token refused', 10_000, 100);

  // At 390 pixels wide nothing scrolls sideways, once the page has followed the new width (the charts redraw
  // when their box is resized, a frame later).
  await page.setViewportSize({ width: 390, height: 844 });
  await eventually(async () => ((await page.evaluate('document.documentElement.scrollWidth')) as number) <= 390, 'the view fits 390 pixels', 5_000, 50);

  assert.deepEqual(problems, []);
  assert.deepEqual(elsewhere(), []);
});
