// The document compiled by `npm run build` (src/http/contract-build.ts) is the document as it is now, and what a
// process starts from: `serve` neither parses the YAML nor compiles a validator or serializer. Every validation and
// response test then runs on the generated code (startApp builds the app as `serve` does).
import assert from 'node:assert/strict';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { builtContractModule } from '../../src/http/contract-build.js';
import { BUILT_CONTRACT_PATH, CONTRACT_PATH, loadBuiltContract, loadContract, serializerKey, validatorKey } from '../../src/http/contract.js';
import { spawnServer, migratedDatabaseUrl, tempDir } from '../helpers/app.js';

test('the generated module is what the build makes from the document as it is now', () => {
  assert.equal(readFileSync(BUILT_CONTRACT_PATH, 'utf8'), builtContractModule(), 'stale: run npm run build');
});

test('it holds the served document, a validator for every request part and a serializer for every response of every operation', async () => {
  const built = await loadBuiltContract();
  assert.ok(!('stale' in built), 'stale' in built ? built.stale : '');
  const source = loadContract();
  assert.equal(built.contract.json, source.json);
  assert.equal(built.contract.yaml, source.yaml);
  assert.deepEqual(built.contract.operations, source.operations);
  const parts = source.operations.flatMap((op) =>
    (['body', 'params', 'querystring'] as const).filter((p) => (p === 'body' ? op.body : op[p])).map((p) => validatorKey(op.method, op.url, p)),
  );
  assert.deepEqual(Object.keys(built.validators).sort(), parts.sort());
  const responses = source.operations.flatMap((op) => Object.keys(op.responses).map((status) => serializerKey(op.method, op.url, status)));
  assert.deepEqual(Object.keys(built.serializers).sort(), responses.sort());
});

test('a document changed after the build is read from its source', async (t) => {
  const dir = tempDir(t);
  const copy = join(dir, 'plant-store.yaml');
  copyFileSync(CONTRACT_PATH, copy);
  assert.ok(!('stale' in (await loadBuiltContract(copy))));
  writeFileSync(copy, `${readFileSync(copy, 'utf8')}\n# changed\n`);
  const built = await loadBuiltContract(copy);
  assert.ok('stale' in built && built.stale.includes('changed after'), JSON.stringify(built));
  assert.ok('stale' in (await loadBuiltContract(CONTRACT_PATH, new URL('file:///nonexistent/contract.js'))));
});

test('serve starts from it: no warning that the document is compiled at start-up', async (t) => {
  const server = await spawnServer(t, { DATABASE_URL: await migratedDatabaseUrl(t), LOG_LEVEL: 'info', BOOTSTRAP_TOKEN: 'false', WORKERS: '1' });
  const res = await fetch(`${server.url}/plants/abc`);
  assert.equal(res.status, 401);
  server.proc.kill('SIGTERM');
  assert.equal(await server.exited, 0);
  assert.doesNotMatch(server.stdout() + server.stderr(), /compiled at start-up|compiled at build time/);
});
