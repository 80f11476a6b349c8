// A plant's name and tag are at most maxLength (256) characters, counted in code points, on every write path:
// POST, PUT, PATCH (the patch and the plant it makes), `plant-store import` and the typed client; a longer one
// is 400 naming the field, exactly maxLength is accepted (a non-BMP character counts once).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createPlantStoreClient, maxLength, type ErrorBody } from '@plant-store/client';
import { errorOf, freshDatabaseUrl, runCli, startApp, tempDir, type TestApp } from '../helpers/app.js';
import { storedPlant } from '../helpers/stored-plant.js';

const MAX = 256;
// 256 code points, 512 UTF-16 units: over the limit if anything counted `length`.
const AT_MAX = '\u{1F331}'.repeat(MAX);
const OVER = 'x'.repeat(MAX + 1);
const OVER_WIDE = '\u{1F331}'.repeat(MAX + 1);

function send(s: TestApp, method: 'PUT' | 'PATCH', id: number, body: unknown): Promise<Response> {
  return fetch(`${s.url}/plants/${id}`, {
    method,
    headers: { authorization: `Bearer ${s.token.write}`, 'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json' },
    body: JSON.stringify(body),
  });
}

async function rejected(res: Response, field: 'name' | 'tag'): Promise<void> {
  assert.equal(res.status, 400);
  const { error, message } = await errorOf(res);
  assert.equal(error, 400);
  assert.match(message, new RegExp(`\\b${field} must be at most 256 characters`));
}

test('the document and the client declare the limit the service holds', () => {
  assert.deepEqual(maxLength.Plant, { name: MAX, tag: MAX });
  assert.deepEqual(maxLength.PlantPatch, { name: MAX, tag: MAX });
});

test('POST, PUT and PATCH: over maxLength is 400 naming the field; exactly maxLength code points is stored', async (t) => {
  const s = await startApp(t);
  await rejected(await s.postPlant({ id: 1, name: OVER }), 'name');
  await rejected(await s.postPlant({ id: 1, name: 'fern', tag: OVER_WIDE }), 'tag');
  assert.equal(await storedPlant(s.store, 1n), undefined);

  assert.equal((await s.postPlant({ id: 1, name: AT_MAX, tag: AT_MAX })).status, 200);
  assert.deepEqual(await storedPlant(s.store, 1n), { id: 1n, name: AT_MAX, tag: AT_MAX });

  await rejected(await send(s, 'PUT', 1, { name: OVER_WIDE }), 'name');
  await rejected(await send(s, 'PUT', 1, { name: 'fern', tag: OVER }), 'tag');
  await rejected(await send(s, 'PATCH', 1, { name: OVER }), 'name');
  await rejected(await send(s, 'PATCH', 1, { tag: OVER_WIDE }), 'tag');
  assert.deepEqual(await storedPlant(s.store, 1n), { id: 1n, name: AT_MAX, tag: AT_MAX });

  const put = await send(s, 'PUT', 1, { name: `a${AT_MAX.slice(2)}`, tag: AT_MAX });
  assert.equal(put.status, 200);
  assert.equal(((await put.json()) as { name: string }).name, `a${AT_MAX.slice(2)}`);
  assert.equal((await send(s, 'PATCH', 1, { name: AT_MAX, tag: null })).status, 200);
  assert.deepEqual(await storedPlant(s.store, 1n), { id: 1n, name: AT_MAX });
});

test('PATCH: a plant stored before the limit cannot be patched into an over-long one, only out of it', async (t) => {
  const s = await startApp(t);
  // Written past the service's rules, as a plant stored by an earlier version is.
  await s.store.createPlant({ id: 2n, name: OVER, tag: 'old' });
  const res = await send(s, 'PATCH', 2, { tag: 'new' });
  await rejected(res.clone(), 'name');
  assert.match((await errorOf(res)).message, /stored name is longer/);
  assert.deepEqual(await storedPlant(s.store, 2n), { id: 2n, name: OVER, tag: 'old' });
  assert.equal((await send(s, 'PATCH', 2, { name: 'fern', tag: 'new' })).status, 200);
  assert.deepEqual(await storedPlant(s.store, 2n), { id: 2n, name: 'fern', tag: 'new' });
});

test('the typed client: 400 with an Error body naming the field; exactly maxLength is accepted', async (t) => {
  const s = await startApp(t);
  const client = createPlantStoreClient({ baseUrl: s.url, token: s.token.all });
  const tooLong = async (result: Promise<{ error?: unknown; response: Response }>, field: string) => {
    const { error, response } = await result;
    assert.equal(response.status, 400);
    assert.match((error as ErrorBody).message, new RegExp(`\\b${field} must be at most ${maxLength.Plant.name} characters`));
  };
  await tooLong(client.POST('/plants', { body: { id: 3n, name: OVER_WIDE } }), 'name');
  const created = await client.POST('/plants', { body: { id: 3n, name: AT_MAX, tag: AT_MAX } });
  assert.equal(created.response.status, 200);
  await tooLong(client.PUT('/plants/{id}', { params: { path: { id: 3n } }, body: { name: 'fern', tag: OVER } }), 'tag');
  await tooLong(client.PATCH('/plants/{id}', { params: { path: { id: 3n } }, body: { name: OVER } }), 'name');
  const patched = await client.PATCH('/plants/{id}', { params: { path: { id: 3n } }, body: { tag: AT_MAX.slice(2) } });
  assert.deepEqual(patched.data, { id: 3n, name: AT_MAX, tag: AT_MAX.slice(2) });
});

test('import: over maxLength is an invalid line naming the field, in JSON Lines and CSV; exactly maxLength is imported', async (t) => {
  const dir = tempDir(t);
  const env = { DATABASE_URL: await freshDatabaseUrl(t) };
  const jsonl = join(dir, 'plants.jsonl');
  writeFileSync(jsonl, [{ id: 1, name: AT_MAX, tag: AT_MAX }, { id: 2, name: OVER_WIDE }, { id: 3, name: 'fern', tag: OVER }].map((p) => JSON.stringify(p)).join('\n'));
  const csv = join(dir, 'plants.csv');
  writeFileSync(csv, `id,name,tag\n4,${AT_MAX},\n5,"${OVER}",x\n6,fern,${OVER_WIDE}\n`);
  const lines = async (file: string): Promise<string> => {
    const r = await runCli(['import', file], env);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stdout, /^imported: 1$/m);
    return r.stdout;
  };
  const fromJsonl = await lines(jsonl);
  assert.match(fromJsonl, /^ {2}line 2: name must be at most 256 characters/m);
  assert.match(fromJsonl, /^ {2}line 3: tag must be at most 256 characters/m);
  const fromCsv = await lines(csv);
  assert.match(fromCsv, /^ {2}line 3: name must be at most 256 characters/m);
  assert.match(fromCsv, /^ {2}line 4: tag must be at most 256 characters/m);
  const exported = await runCli(['export'], env);
  assert.deepEqual(exported.stdout.trim().split('\n').map((l) => JSON.parse(l) as unknown), [
    { id: 1, name: AT_MAX, tag: AT_MAX },
    { id: 4, name: AT_MAX },
  ]);
});
