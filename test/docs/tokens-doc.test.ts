// docs/tokens.md tells the truth: the methods it gives for each plants scope are those the document requires that
// scope for, and every time it gives for TOKEN_CACHE_TTL_MS is the setting's default or its maximum.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import YAML from 'yaml';
import { loadConfig, SETTINGS } from '../../src/config.js';

const read = (path: string) => readFileSync(new URL(`../../../${path}`, import.meta.url), 'utf8');
const PAGE = read('docs/tokens.md');
const DOCUMENT = YAML.parse(read('openapi/plant-store.yaml')) as { paths: Record<string, Record<string, { security?: Array<Record<string, string[]>> }>> };

test('docs/tokens.md names, for each plants scope, every method of /plants that the document requires it for', () => {
  for (const scope of ['plants:read', 'plants:write']) {
    const required = new Set<string>();
    for (const [path, item] of Object.entries(DOCUMENT.paths)) {
      if (!path.startsWith('/plants')) continue;
      for (const [method, op] of Object.entries(item)) {
        if (op.security?.some((r) => r.bearerAuth?.includes(scope))) required.add(method.toUpperCase());
      }
    }
    const said = new RegExp(`\`${scope}\` \\(([^)]*)\\)`).exec(PAGE)?.[1];
    assert.ok(said, `docs/tokens.md does not say what ${scope} allows`);
    const named = new Set([...said.matchAll(/`([A-Z]+)`/g)].map((m) => m[1]));
    assert.deepEqual([...named].sort(), [...required].sort(), `${scope}: ${said}`);
  }
});

test("every time docs/tokens.md gives for TOKEN_CACHE_TTL_MS is the setting's default or its maximum", () => {
  const setting = SETTINGS.find((s) => s.env === 'TOKEN_CACHE_TTL_MS')!;
  const defaultS = (setting.default as number) / 1000;
  // The largest accepted value, found from the setting itself.
  let maxMs = setting.default as number;
  while (maxMs < 60_000) {
    try {
      loadConfig({ TOKEN_CACHE_TTL_MS: String(maxMs + 1000) });
      maxMs += 1000;
    } catch {
      break;
    }
  }
  const mentions = [...PAGE.matchAll(/TOKEN_CACHE_TTL_MS`? \(([^)]*)\)/g)].map((m) => m[1]!).filter((said) => /\d s\b/.test(said));
  assert.ok(mentions.length >= 2, `mentions: ${mentions.join(' | ')}`);
  for (const said of mentions) {
    assert.match(said, new RegExp(`default ${defaultS} s`), said);
    for (const [, at, n] of said.matchAll(/(default|at most|within) (\d+) s/g)) {
      assert.equal(Number(n), at === 'default' ? defaultS : maxMs / 1000, `"${said}": ${at} ${n} s (default ${defaultS} s, at most ${maxMs / 1000} s)`);
    }
  }
});
