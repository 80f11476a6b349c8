// What npm prints in a clone on a machine whose own Node.js is 20 (npm 11 runs there): `npm ci` warns
// EBADENGINE for exactly the packages the README lists, as many times as it says (npm compares them with its own
// Node.js, not the Node.js 24 they run on), and not for the clone itself (package.json's devEngines). The first
// `npx plant-store` of a clone links the clone into npx's cache and warns for plant-store as often as the README
// says; a later run does not warn. With an empty cache, as a new user has it, that first run fetches the metadata
// of every dependency from the registry (15-30 s); without a registry to reach, that test is skipped.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { badEnginePackages, npmOnNode20 } from './support.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const README = readFileSync(new URL('README.md', `file://${ROOT}`), 'utf8');

test("npm ci on Node.js 20 warns EBADENGINE for exactly the packages the README lists, as many times as it says", () => {
  const listed = /`npm ci` warns `EBADENGINE` for ([^:]+):/.exec(README)?.[1];
  assert.ok(listed, 'the README no longer says what npm ci warns about');
  const twice = /The client's block comes twice/.test(README) ? ['@plant-store/client'] : [];
  // A dry run computes the same tree and makes the same checks, and changes nothing.
  const r = npmOnNode20(['ci', '--dry-run', '--ignore-scripts', '--no-audit', '--no-fund'], ROOT, { timeoutMs: 60_000 });
  assert.equal(r.status, 0, r.stderr);
  const names = [...listed.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
  assert.deepEqual(badEnginePackages(r.stderr), [...names].sort(), r.stderr);
  // npm checks every node of the tree, and a workspace is two (its folder and its link): each has its block.
  const blocks = [...r.stderr.matchAll(/^npm warn EBADENGINE +package: '(.+)@[^@']+',?$/gm)].map((m) => m[1]!);
  assert.deepEqual(
    Object.fromEntries(names.map((name) => [name, blocks.filter((b) => b === name).length])),
    Object.fromEntries(names.map((name) => [name, twice.includes(name) ? 2 : 1])),
    r.stderr,
  );
});

const COUNTS: Record<string, number> = { once: 1, twice: 2 };

test('the first npx plant-store of a clone, on Node.js 20 with an empty npm cache, warns EBADENGINE for plant-store as often as the README says, and the next run not at all; dist/ is not rebuilt', { timeout: 240_000 }, (t) => {
  const said = /The first `npx plant-store` in a clone prints the same block (once|twice) for `plant-store` itself/.exec(README)?.[1];
  assert.ok(said, 'the README no longer says how often the first npx plant-store warns');
  assert.match(README, /Later runs print none\./, 'the README no longer says that later runs do not warn');
  const cache = mkdtempSync(join(tmpdir(), 'npx-cache-'));
  t.after(() => rmSync(cache, { recursive: true, force: true }));
  const blocks = (stderr: string) => [...stderr.matchAll(/^npm warn EBADENGINE +package: '(.+)@[^@']+',?$/gm)].map((m) => m[1]!);
  const built = statSync(join(ROOT, 'dist/src/cli/main.js')).mtimeMs;
  const first = npmOnNode20(['--cache', cache, 'plant-store', '--help'], ROOT, { npx: true, timeoutMs: 180_000 });
  if (first.status !== 0 && /ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|ENETUNREACH/.test(first.stderr)) {
    t.skip('the npm registry cannot be reached from here');
    return;
  }
  assert.equal(first.status, 0, first.stderr);
  assert.match(first.stdout, /^Usage: plant-store/m);
  assert.deepEqual(blocks(first.stderr), Array(COUNTS[said]).fill('plant-store'), first.stderr);
  // npm runs the clone's prepare step here: it leaves the build alone, which other tests and servers run from.
  assert.equal(statSync(join(ROOT, 'dist/src/cli/main.js')).mtimeMs, built, 'npx rebuilt dist/');
  const again = npmOnNode20(['--cache', cache, 'plant-store', '--help'], ROOT, { npx: true, timeoutMs: 60_000 });
  assert.equal(again.status, 0, again.stderr);
  assert.deepEqual(blocks(again.stderr), [], again.stderr);
});
