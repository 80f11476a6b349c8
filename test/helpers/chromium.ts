// Debian's Chromium driven by playwright-core (never a downloaded browser), closed when the test ends.
// npm test installs the chromium package as root, or names it before running (scripts/preflight.mjs).
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import type { TestContext } from 'node:test';
import { chromium, type Browser } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

export async function launchChromium(t: TestContext): Promise<Browser> {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: this test drives Debian's Chromium (apt-get install -y chromium; npm test installs it as root)`);
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    timeout: 20_000,
  });
  t.after(() => browser.close());
  return browser;
}
