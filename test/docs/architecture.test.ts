// docs/architecture.md names every source folder and what it holds: a folder it lists must exist, and a
// folder under src/ that it does not list fails here, so the map cannot drift from the tree.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** The folders in the first column of the Folders table (`src/...`). */
function listed(): string[] {
  const doc = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
  return [...doc.matchAll(/^\| `(src\/[^`]*)` \|/gm)].map((m) => m[1]!.replace(/\/$/, ''));
}

function sourceFolders(dir = 'src'): string[] {
  return [dir, ...readdirSync(join(ROOT, dir)).filter((e) => statSync(join(ROOT, dir, e)).isDirectory()).flatMap((e) => sourceFolders(`${dir}/${e}`))];
}

test('every folder docs/architecture.md lists exists', () => {
  const folders = listed();
  assert.ok(folders.length >= 10, `expected the Folders table, found ${folders.length} rows`);
  for (const f of folders) assert.ok(existsSync(join(ROOT, f)) && statSync(join(ROOT, f)).isDirectory(), `${f} is listed but does not exist`);
});

test('every folder under src/ is listed in docs/architecture.md', () => {
  const folders = new Set(listed());
  const missing = sourceFolders().filter((f) => !folders.has(f));
  assert.deepEqual(missing, [], `not in docs/architecture.md: ${missing.join(', ')}`);
});
