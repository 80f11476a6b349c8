// The console at /console in a real browser (Debian's Chromium through playwright-core), as a new user meets it:
// a wrong token is refused with the API's message; the right one signs in and stays in the tab's sessionStorage
// only; a plant is created from the form, its id above 2^53 shown digit for digit and a name made of HTML shown
// as text; search ignores accents and case; pages go forward and back by cursor; the count comes on demand; a
// refusal shows the API's message; signing out forgets the token. Nothing loads from another origin, the page's
// policy allows no inline script, and axe-core finds no serious or critical violation. CONSOLE=off: no route.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { startApp } from '../helpers/app.js';
import { launchChromium } from '../helpers/chromium.js';
import { eventually } from '../helpers/sleep.js';
import { violations } from './kit.js';
import { CONSOLE_CSP } from '../../src/console/console-page.js';

const BIG_ID = '9007199254740993';
const HTML_NAME = '<img src=x onerror="document.title=`pwned`">';

test('the console in Chromium: sign in, create, search, page, count, a refusal, sign out; strict policy, nothing from elsewhere, no serious axe violation', { timeout: 120_000 }, async (t) => {
  const s = await startApp(t);
  const origin = new URL(s.url).origin;
  // Plants for search and paging, through the API.
  for (let i = 1; i <= 25; i++) assert.equal((await s.postPlant({ id: i, name: i === 7 ? 'Monstéra deliciosa' : `fern ${i}`, tag: 'green' })).status, 200);

  const browser = await launchChromium(t);
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  const requests: string[] = [];
  const problems: string[] = [];
  page.on('request', (r) => requests.push(r.url()));
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    // Chromium logs each refused fetch; the 401, 403 and 409 below are asked for.
    if (m.type() === 'error' && !/status of (401|403|409)/.test(m.text())) problems.push(`console error: ${m.text()}`);
  });
  page.on('dialog', (d) => {
    problems.push(`a dialog opened: ${d.message()}`);
    void d.dismiss();
  });

  const answer = await page.goto(`${s.url}/console`);
  assert.equal(answer?.status(), 200);
  assert.equal(answer?.headers()['content-security-policy'], CONSOLE_CSP);
  assert.match(CONSOLE_CSP, /script-src 'self';/);
  assert.doesNotMatch(CONSOLE_CSP, /unsafe-inline|unsafe-eval/);
  assert.deepEqual(await violations(page), [], 'the sign-in page');

  // A wrong token: the API's message, and still signed out.
  await page.getByLabel('API token').fill('pst_not-a-token');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('alert').waitFor();
  assert.match(await page.getByRole('alert').innerText(), /token/i);

  await page.getByLabel('API token').fill(s.token.all);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Plants' }).waitFor();
  assert.ok(page.url().endsWith('/console') || page.url().endsWith('/console#plants'), page.url());
  assert.doesNotMatch(page.url(), /pst_/);
  assert.equal(await page.evaluate(() => localStorage.length), 0, 'nothing in localStorage');
  assert.ok(await page.evaluate((token) => Object.values(sessionStorage).includes(token), s.token.all), 'the token is in sessionStorage');
  await page.getByRole('cell', { name: '20', exact: true }).waitFor();
  assert.equal(await page.getByRole('row').count(), 21, 'a page of 20 plants and the header');
  assert.deepEqual(await violations(page), [], 'the plants view');

  // Pages by cursor, forward and back.
  await page.getByRole('button', { name: 'Next page' }).click();
  await page.getByRole('cell', { name: '25', exact: true }).waitFor();
  assert.equal(await page.getByRole('row').count(), 6);
  assert.equal(await page.getByRole('button', { name: 'Next page' }).isDisabled(), true);
  await page.getByRole('button', { name: 'Previous page' }).click();
  await page.getByRole('cell', { name: '1', exact: true }).waitFor();

  // The count on demand.
  await page.getByRole('button', { name: 'Count' }).click();
  assert.equal(await page.getByLabel('Plants found').innerText(), '25 plants');

  // A new plant: its id above 2^53 exactly, its HTML name as text.
  await page.getByRole('button', { name: 'New plant' }).click();
  const form = page.getByRole('form', { name: 'New plant' });
  await form.getByLabel('ID').fill(BIG_ID);
  await form.getByLabel('Name').fill(HTML_NAME);
  await form.getByLabel('Tag').fill('tropical');
  await form.getByRole('button', { name: 'Create' }).click();
  await page.getByLabel('Sort').selectOption('-id');
  await page.getByRole('button', { name: 'Search' }).click();
  await page.getByRole('cell', { name: BIG_ID, exact: true }).waitFor();
  assert.equal(await page.getByRole('cell', { name: HTML_NAME, exact: true }).count(), 1, 'the name is shown as its characters');
  assert.equal(await page.locator('table img').count(), 0, 'no element was made from the name');
  assert.notEqual(await page.title(), 'pwned');
  const stored = await (await fetch(`${s.url}/plants/${BIG_ID}`, { headers: { authorization: `Bearer ${s.token.read}` } })).text();
  assert.match(stored, new RegExp(`^\\{"id":${BIG_ID},`), stored);

  // Search: accents and case ignored.
  await page.getByLabel('Search plants').fill('MONSTERA');
  await page.getByRole('button', { name: 'Search' }).click();
  // The plant is on the page before the search too: wait for the page to hold it alone.
  await eventually(async () => (await page.locator('tbody tr').count()) === 1, 'the search result alone', 10_000, 50);
  assert.equal(await page.getByRole('cell', { name: 'Monstéra deliciosa' }).count(), 1);

  // A refusal: the same id with another name is 409, and the API's message is shown.
  await page.getByRole('button', { name: 'New plant' }).click();
  await form.getByLabel('ID').fill('7');
  await form.getByLabel('Name').fill('another');
  await form.getByRole('button', { name: 'Create' }).click();
  await form.getByRole('alert').waitFor();
  const conflict = await (await s.postPlant({ id: 7, name: 'another' })).json() as { message: string };
  assert.equal(await form.getByRole('alert').innerText(), conflict.message);

  // Sign out: the token is forgotten.
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByLabel('API token').waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.length), 0);

  assert.deepEqual(problems, []);
  const elsewhere = requests.filter((u) => new URL(u).origin !== origin);
  assert.deepEqual(elsewhere, [], 'every request goes to the service itself');
});

test("a plant's page: edit with If-Match, a change made meanwhile shown beside the user's and applied again, delete after confirmation", { timeout: 60_000 }, async (t) => {
  const s = await startApp(t);
  assert.equal((await s.postPlant({ id: 7, name: 'fern', tag: 'green' })).status, 200);
  const stored = async () => (await (await fetch(`${s.url}/plants/7`, { headers: { authorization: `Bearer ${s.token.read}` } })).json()) as { name: string; tag?: string };
  const browser = await launchChromium(t);
  const page = await browser.newPage();
  page.setDefaultTimeout(10_000);
  await page.goto(`${s.url}/console`);
  await page.getByLabel('API token').fill(s.token.all);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('link', { name: '7', exact: true }).click();
  await page.getByRole('heading', { name: 'Plant 7' }).waitFor();
  const edit = page.getByRole('form', { name: 'Edit plant' });
  await edit.getByLabel('Name').fill('fern seven');
  await edit.getByRole('button', { name: 'Save' }).click();
  await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
  assert.equal((await stored()).name, 'fern seven');
  assert.deepEqual(await violations(page), [], "the plant's page");

  // Someone else changes it; this page's save is refused (412) and shows the newer version beside its own.
  const elsewhere = await fetch(`${s.url}/plants/7`, { method: 'PUT', headers: { authorization: `Bearer ${s.token.write}`, 'content-type': 'application/json' }, body: '{"name":"changed elsewhere","tag":"blue"}' });
  assert.equal(elsewhere.status, 200);
  await edit.getByLabel('Tag').fill('red');
  await edit.getByRole('button', { name: 'Save' }).click();
  const conflict = page.getByRole('region', { name: 'Changed meanwhile' });
  await conflict.waitFor();
  assert.match(await conflict.innerText(), /changed elsewhere \(blue\)[\s\S]*fern seven \(red\)/);
  const meanwhile = await stored();
  assert.deepEqual([meanwhile.name, meanwhile.tag], ['changed elsewhere', 'blue'], 'nothing of the page was saved');
  await edit.getByRole('button', { name: 'Apply my change again' }).click();
  await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
  assert.equal((await stored()).name, 'fern seven');
  assert.equal((await stored()).tag, 'red');

  // Delete asks first.
  await page.getByRole('button', { name: 'Delete' }).click();
  await page.getByRole('group', { name: 'Confirm delete' }).getByRole('button', { name: 'Yes, delete it' }).click();
  await page.getByRole('status').filter({ hasText: 'Deleted.' }).waitFor();
  assert.equal((await fetch(`${s.url}/plants/7`, { headers: { authorization: `Bearer ${s.token.read}` } })).status, 404);
});

test('390 pixels wide, with a plants:read token: nothing scrolls sideways, no usable New plant, a plant read-only, and no token actions', { timeout: 60_000 }, async (t) => {
  const s = await startApp(t);
  assert.equal((await fetch(`${s.url}/plants`, { method: 'POST', headers: { authorization: `Bearer ${s.token.write}`, 'content-type': 'application/json' }, body: `{"id":9223372036854775807,"name":"${'a rather long plant name '.repeat(4).trim()}","tag":"green"}` })).status, 200);
  const browser = await launchChromium(t);
  const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
  page.setDefaultTimeout(10_000);
  await page.goto(`${s.url}/console`);
  await page.getByLabel('API token').fill(s.token.read);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Plants' }).waitFor();
  await page.getByRole('cell', { name: '9223372036854775807', exact: true }).waitFor();
  assert.ok(((await page.evaluate('document.documentElement.scrollWidth')) as number) <= 390, 'the page fits 390 pixels');
  assert.deepEqual(await violations(page), []);
  // Least privilege: what the token cannot do is not offered.
  assert.equal(await page.getByRole('button', { name: 'New plant' }).count(), 0, 'a plants:read token is offered New plant');
  await page.getByRole('link', { name: '9223372036854775807' }).click();
  await page.getByRole('heading', { name: 'Plant 9223372036854775807' }).waitFor();
  await page.locator('dl.facts').waitFor();
  assert.match(await page.locator('dl.facts').innerText(), /a rather long plant name/);
  for (const name of ['Save', 'Delete']) assert.equal(await page.getByRole('button', { name }).count(), 0, `a plants:read token is offered ${name}`);
  await page.getByRole('link', { name: 'Tokens' }).click();
  await page.getByText('This token may not manage tokens').waitFor();
  assert.deepEqual(await page.getByRole('main').getByRole('button').count(), 0, 'a token without tokens:manage is offered a token action');
});

test('by keyboard alone: sign in, open the new plant form, create a plant', { timeout: 60_000 }, async (t) => {
  const s = await startApp(t);
  const browser = await launchChromium(t);
  const page = await browser.newPage();
  page.setDefaultTimeout(10_000);
  await page.goto(`${s.url}/console`);
  // The token field is the first control: Tab reaches it, Enter submits.
  await page.keyboard.press('Tab');
  await page.keyboard.type(s.token.all);
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Plants' }).waitFor();
  /** Presses Tab until `target` has the focus (at most 20 times). */
  const tabTo = async (target: ReturnType<Page['getByRole']>) => {
    for (let i = 0; i < 20 && !(await target.evaluate((e) => e === e.ownerDocument.activeElement)); i++) await page.keyboard.press('Tab');
    assert.ok(await target.evaluate((e) => e === e.ownerDocument.activeElement), 'Tab reaches it');
  };
  await tabTo(page.getByRole('button', { name: 'New plant' }));
  await page.keyboard.press('Enter');
  const form = page.getByRole('form', { name: 'New plant' });
  await tabTo(form.getByRole('textbox', { name: 'ID' }));
  await page.keyboard.type('42');
  await page.keyboard.press('Tab');
  await page.keyboard.type('fern');
  await page.keyboard.press('Enter');
  await page.getByRole('cell', { name: '42', exact: true }).waitFor();
  assert.equal((await fetch(`${s.url}/plants/42`, { headers: { authorization: `Bearer ${s.token.read}` } })).status, 200);
});

test('CONSOLE=off: /console and its assets are not served', async (t) => {
  const s = await startApp(t, { config: { console: false } });
  for (const path of ['/console', '/console/assets/console.js']) assert.equal((await fetch(`${s.url}${path}`)).status, 404, path);
});
