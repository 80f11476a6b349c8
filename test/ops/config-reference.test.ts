// The configuration reference cannot drift from the code: docs/configuration.md's table and .env.example are what
// the settings list renders (regenerate with `npm run docs:config`), and every variable the code reads is in both.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { envExample, loadConfig, SETTINGS, settingsTable } from '../../src/config.js';

const ROOT = new URL('../../../', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, ROOT), 'utf8');
const HINT = 'run `npm run build && npm run docs:config` and commit the result';

test('docs/configuration.md holds exactly the table the settings list renders, one row per setting', () => {
  const page = read('docs/configuration.md');
  const table = /<!-- settings:start -->\n([\s\S]*?)<!-- settings:end -->/.exec(page)?.[1];
  assert.ok(table !== undefined, 'docs/configuration.md lost its settings markers');
  assert.equal(table, settingsTable(), `docs/configuration.md is stale: ${HINT}`);
  const rows = table.split('\n').filter((l) => l.startsWith('| `'));
  assert.deepEqual(rows.map((r) => /^\| `([A-Z0-9_]+)`/.exec(r)?.[1]), SETTINGS.map((s) => s.env));
});

test('.env.example lists every setting with its default, and loading it gives the default configuration', () => {
  const text = read('.env.example');
  assert.equal(text, envExample(), `.env.example is stale: ${HINT}`);
  const env = Object.fromEntries(
    text.split('\n').filter((l) => /^[A-Z]/.test(l)).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );
  assert.deepEqual(Object.keys(env), SETTINGS.map((s) => s.env));
  assert.deepEqual(loadConfig(env), loadConfig({}), 'a value in .env.example is not the default');
});

test('no code outside src/config.ts reads the environment, so the table is every setting there is', () => {
  const files = readdirSync(new URL('src/', ROOT), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
  const readers = files.filter((f) => f !== 'config.ts' && /process\.env\b(?!\.NO_COLOR\b)/.test(read(`src/${f}`)));
  // NO_COLOR is the terminal convention (no-color.org) for the readable log lines, not a setting of the service.
  assert.deepEqual(readers, []);
});
