// /docs in a real browser: Debian's Chromium (driven by playwright-core, no downloaded browser) opens the
// Plant Store's page, authorizes with a bearer token, sends POST /plants from the page and sees the 200 and
// the body; after logging out the same request shows the 401. Ids beyond 2^53 go both ways digit for digit:
// the page sends them in a body and a path, and shows them in the answers of GET /plants/{id} and GET /plants.
// Every request the page makes goes to the service itself, nothing fails on the page, and a screenshot of the
// page with the 200 is kept in test-artifacts/docs-page.png (git-ignored).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { startApp } from '../helpers/app.js';
import { launchChromium } from '../helpers/chromium.js';

const ARTIFACTS = fileURLToPath(new URL('../../../test-artifacts/', import.meta.url));

// Above 2^53, where a double keeps neither: JavaScript would write them 9223372036854776000 and -9223372036854776000.
const PLANT_ID = '9223372036854775805';
const NEGATIVE_ID = '-9223372036854775807';
const BODY = `{"id": ${PLANT_ID}, "name": "fern", "tag": "green"}`;

test('/docs in Chromium: authorize, POST /plants answers 200 with the plant, without a token 401; nothing loads from elsewhere', { timeout: 60_000 }, async (t) => {
  const s = await startApp(t);
  const origin = new URL(s.url).origin;

  const browser = await launchChromium(t);
  const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);

  const requests: string[] = [];
  const problems: string[] = [];
  page.on('request', (r) => requests.push(r.url()));
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()} ${r.failure()?.errorText ?? ''}`));
  page.on('console', (m) => {
    // Chromium reports every non-2xx fetch on the console; the 401 is the one this test asks for.
    if (m.type() === 'error' && !/status of 401/.test(m.text())) problems.push(`console error: ${m.text()}`);
  });

  const nav = await page.goto(`${s.url}/docs`);
  assert.ok(nav, 'navigation to /docs produced no response');
  assert.ok(nav.ok(), `/docs answered ${nav.status()}`);
  await page.locator('.btn.authorize').first().waitFor();
  // The Plant Store's page: its title and icon, no Swagger top bar (logo, Explore box).
  assert.equal(await page.title(), 'Plant Store API');
  assert.equal(await page.locator('.topbar').count(), 0, 'the Swagger UI top bar is gone');
  assert.equal(await page.locator('#swagger-ui input[type=text]:not(.parameters *):not(.modal-ux *)').count(), 0, 'no box to load another document');
  assert.equal(await page.locator('link[rel=icon]').getAttribute('type'), 'image/svg+xml');

  // The page opens on the operations: the first one is on the first screen, not below the document's prose.
  const firstOperation = page.locator('.opblock').first();
  await firstOperation.waitFor();
  assert.equal(await page.evaluate<number>('window.scrollY'), 0, 'the page opened scrolled');
  const box = await firstOperation.boundingBox();
  t.diagnostic(`the first operation's top: ${box?.y} px`);
  assert.ok(box && box.y + box.height <= 1000, `the first operation is at ${JSON.stringify(box)}, below a 1000-pixel-high window`);
  assert.match(await firstOperation.innerText(), /\/plants/);

  // The webhooks section is about every plant event, not newPlant alone.
  const webhooksTag = await page.locator('#operations-tag-webhooks').innerText();
  for (const event of ['newPlant', 'plantUpdated', 'plantDeleted']) assert.match(webhooksTag, new RegExp(event), `the webhooks section's title: ${webhooksTag}`);

  // Authorize with a token that has plants:read and plants:write.
  await page.locator('.btn.authorize').first().click();
  // The bearer scheme's form (the other is the stream ticket's).
  const bearer = page.locator('.modal-ux form', { hasText: 'bearerAuth' });
  await bearer.locator('input').fill(s.token.all);
  await bearer.locator('.btn.modal-btn.auth.authorize').click();
  await bearer.locator('.btn-done').click();
  await page.locator('.modal-ux').waitFor({ state: 'detached' });

  // Open POST /plants ("Try it out" is already on by configuration) and send the body.
  const op = page.locator('#operations-plants-addPlant');
  await op.locator('.opblock-summary').click();
  const first = await execute(page, op, () => op.locator('textarea.body-param__text').fill(BODY), '/plants');
  assert.equal(first.status, '200', `POST /plants from the page: ${first.status} ${first.body}`);
  // The answer is the Plant (name and tag; the contract's Plant has no id) and the page shows where it lives.
  assert.deepEqual(JSON.parse(first.body), { name: 'fern', tag: 'green' });
  assert.match(first.row, new RegExp(`location: /plants/${PLANT_ID}\\b`), `the page's response headers: ${first.row}`);
  // The service stored exactly what the page sent (the id was not rounded by the page's JavaScript).
  const stored = await fetch(`${s.url}/plants/${PLANT_ID}`, { headers: { authorization: `Bearer ${s.token.read}` } });
  assert.equal(stored.status, 200, `GET /plants/${PLANT_ID} after the page's POST`);
  const storedText = await stored.text();
  assert.match(storedText, /"name"\s*:\s*"fern"/);
  assert.match(storedText, new RegExp(`"id"\\s*:\\s*${PLANT_ID}\\b`));

  // The id sent as a path parameter, and the answer shown as the service wrote it.
  const get = page.locator('#operations-plants-getPlant');
  await get.locator('.opblock-summary').click();
  // Nothing fills If-None-Match in: a pre-filled tag would make Try-it-out answer 304 with no body.
  assert.equal(await get.locator('tr[data-param-name="If-None-Match"] input').inputValue(), '', 'If-None-Match is pre-filled');
  const one = await execute(page, get, () => get.locator('tr[data-param-name="id"] input').fill(PLANT_ID), `/plants/${PLANT_ID}`);
  assert.equal(one.status, '200', `GET /plants/${PLANT_ID} from the page: ${one.status} ${one.body}`);
  assert.match(one.body, new RegExp(`"id": ${PLANT_ID},`), `the page shows the id as the service wrote it: ${one.body}`);
  assert.match(await get.locator('.request-url').innerText(), new RegExp(`/plants/${PLANT_ID}$`), 'the request URL the page shows');

  // A page of plants, one at each end of the range, shown exactly.
  assert.equal((await s.postPlant(`{"id": ${NEGATIVE_ID}, "name": "moss"}`)).status, 200);
  const list = page.locator('#operations-plants-listPlants');
  await list.locator('.opblock-summary').click();
  // Try-it-out starts from the document's examples, which make one valid request together (a name-order cursor
  // with sort=name): sent as the page fills it in, it is answered.
  const prefilled = await execute(page, list, async () => {}, '/plants');
  assert.equal(prefilled.status, '200', `GET /plants as the page fills it in: ${prefilled.status} ${prefilled.body}`);
  // A page of everything in id order has none of them.
  const all = await execute(page, list, async () => {
    for (const name of ['after', 'tag', 'q', 'after_name']) await list.locator(`tr[data-param-name="${name}"] input`).fill('');
    await list.locator('tr[data-param-name="sort"] select').selectOption('id');
  }, '/plants');
  assert.equal(all.status, '200', `GET /plants from the page: ${all.status} ${all.body}`);
  const shownIds = [...all.body.matchAll(/"id": (-?\d+)/g)].map((m) => m[1]);
  assert.deepEqual(shownIds, [NEGATIVE_ID, PLANT_ID], `the page's list: ${all.body}`);

  mkdirSync(ARTIFACTS, { recursive: true });
  const screenshot = `${ARTIFACTS}docs-page.png`;
  await page.screenshot({ path: screenshot, fullPage: true });
  t.diagnostic(`screenshot: ${screenshot}`);

  // Log out and send again: the service answers 401 and the page shows it.
  await page.locator('.btn.authorize').first().click();
  await page.locator('.modal-ux button', { hasText: 'Logout' }).click();
  await page.locator('.modal-ux form', { hasText: 'bearerAuth' }).locator('.btn-done').click();
  await page.locator('.modal-ux').waitFor({ state: 'detached' });
  const second = await execute(page, op, () => op.locator('textarea.body-param__text').fill(BODY), '/plants');
  assert.equal(second.status, '401', `POST /plants without a token: ${second.status} ${second.body}`);
  const error = JSON.parse(second.body) as { error: number; message: string };
  assert.equal(error.error, 401);

  assert.deepEqual(problems, [], 'the page reported problems');
  assert.ok(requests.some((u) => u === `${origin}/plants`), `the page never sent POST /plants: ${requests.join(', ')}`);
  const elsewhere = requests.filter((u) => new URL(u).origin !== origin);
  assert.deepEqual(elsewhere, [], 'the page made requests outside the service');
});

/** Fills the request in, presses Execute, and returns the live response's status and body text. */
async function execute(page: Page, op: ReturnType<Page['locator']>, fill: () => Promise<unknown>, path: string): Promise<{ status: string; body: string; row: string }> {
  // Clear the previous answer first, so what is read below is this request's.
  const clear = op.locator('.btn-clear');
  if (await clear.count()) await clear.click();
  await op.locator('.live-responses-table').waitFor({ state: 'detached' });
  await fill();
  const answered = page.waitForResponse((r) => new URL(r.url()).pathname === path);
  await op.locator('.execute').click();
  await answered;
  const row = op.locator('.live-responses-table tbody tr.response').first();
  await row.waitFor();
  const status = row.locator('.response-col_status');
  const bodyText = row.locator('.response-col_description pre.microlight').first();
  await bodyText.waitFor();
  return { status: (await status.innerText()).trim(), body: (await bodyText.innerText()).trim(), row: await row.innerText() };
}
