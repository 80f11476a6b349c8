// What every console test in Chromium needs: a page signed in with a token, a watch on what goes wrong in it (page
// errors, console errors, dialogs, requests to another origin) and axe-core's serious and critical violations.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { TestContext } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../helpers/chromium.js';

const require = createRequire(import.meta.url);
const AXE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

/** axe-core's serious and critical violations on the page as it is now. */
export async function violations(page: Page): Promise<string[]> {
  // Through the debugging protocol, which the page's policy does not govern: the page itself allows no eval.
  await page.evaluate(AXE);
  const result = (await page.evaluate(() => (globalThis as unknown as { axe: { run(): Promise<unknown> } }).axe.run())) as {
    violations: { id: string; impact: string; nodes: unknown[] }[];
  };
  return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} (${v.nodes.length})`);
}

export interface Watched {
  page: Page;
  browser: Browser;
  /** Page errors, console errors other than the refusals `expected` names, and dialogs. */
  problems: string[];
  /** Every URL the page asked for. */
  requests: string[];
  /** The requests that went to another origin than the service's. */
  elsewhere(): string[];
}

/**
 * A new page on the console of the service at `url`, watched; signed in with `token` when one is given.
 * `expected` matches the HTTP statuses of refusals the test asks for, which Chromium logs as console errors.
 */
export async function openConsole(t: TestContext, url: string, options: { token?: string; width?: number; expected?: RegExp; browser?: Browser } = {}): Promise<Watched> {
  const browser = options.browser ?? (await launchChromium(t));
  const page = await browser.newPage({ viewport: { width: options.width ?? 1280, height: 900 } });
  page.setDefaultTimeout(10_000);
  const problems: string[] = [];
  const requests: string[] = [];
  const expected = options.expected ?? /status of (401|403|409)/;
  page.on('request', (r) => requests.push(r.url()));
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && !expected.test(m.text())) problems.push(`console error: ${m.text()}`);
  });
  page.on('dialog', (d) => {
    problems.push(`a dialog opened: ${d.message()}`);
    void d.dismiss();
  });
  const answer = await page.goto(`${url}/console`);
  assert.equal(answer?.status(), 200);
  if (options.token) await signIn(page, options.token);
  const origin = new URL(url).origin;
  return { page, browser, problems, requests, elsewhere: () => requests.filter((u) => new URL(u).origin !== origin) };
}

export async function signIn(page: Page, token: string): Promise<void> {
  await page.getByLabel('API token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Views' }).waitFor();
}
