// What npm prints in a clone on a machine whose own Node.js is 20 (npm 11 runs there): `npm ci` warns
// EBADENGINE for exactly the packages the README lists, as many times as it says (npm compares them with its own
// Node.js, not the Node.js 24 they run on), and not for the clone itself (package.json's devEngines). The first
// `npx plant-store` of a clone is not run here: it links the clone into npx's cache, which on a fresh machine
// fetches the metadata of every dependency (about 30 s).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
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
