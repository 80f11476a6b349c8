// CI fails when the committed generated types (src/contract/schema.ts) are stale against openapi/plant-store.yaml:
// the generator runs again into memory and its output must equal the committed file byte for byte.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

test('src/contract/schema.ts is what `npm run generate:client` makes from the current document', async () => {
  const { stdout } = await promisify(execFile)(process.execPath, ['src/contract/generate.mjs', '--stdout'], {
    cwd: ROOT,
    maxBuffer: 64 * 1024 * 1024,
  });
  const committed = readFileSync(`${ROOT}src/contract/schema.ts`, 'utf8');
  assert.ok(stdout.length > 1000, 'the generator printed the schema');
  assert.equal(committed, stdout, 'src/contract/schema.ts is stale: run `npm run generate:client` and commit it');
});
