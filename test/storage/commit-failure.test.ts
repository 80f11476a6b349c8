// A group commit that cannot happen (another connection holds the write lock) acknowledges nothing: every
// request of the group gets a 503 Error, none of them is stored, and the service recovers by itself.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { errorOf, startApp } from '../helpers/app.js';
import { holdWriteLock } from './lock-holder.js';
import { storedPlant } from '../helpers/stored-plant.js';
import { VERSION } from '../../src/health/version.js';

test('while another connection holds the write lock, creates get 503 and nothing of them is stored; after release they work', async (t) => {
  const s = await startApp(t, { store: { busyTimeoutMs: 50 } });
  const file = s.databaseUrl.slice('sqlite:'.length);
  assert.equal((await s.postPlant({ id: 1, name: 'before' })).status, 200);

  const other = new Database(file);
  t.after(() => {
    if (other.inTransaction) other.exec('ROLLBACK');
    other.close();
  });
  other.exec('BEGIN IMMEDIATE');

  const failedIds = Array.from({ length: 20 }, (_, i) => 100 + i);
  const results = await Promise.all(failedIds.map((id) => s.postPlant({ id, name: `locked-${id}` })));
  for (const res of results) {
    assert.equal(res.status, 503);
    assert.equal(res.headers.get('retry-after'), '1', 'a 503 says when to retry');
    const body = await errorOf(res);
    assert.match(body.message, /nothing was saved/i);
  }

  // Reads go on in WAL mode while the writer is blocked: readiness and lookups still answer.
  const ready = await fetch(`${s.url}/readyz`);
  assert.equal(ready.status, 200);
  assert.deepEqual(await ready.json(), { status: 'ok', version: VERSION });
  assert.deepEqual(await storedPlant(s.store, 1n), { id: 1n, name: 'before' });
  // A replay of an existing plant needs the write path too, so it is refused rather than guessed.
  assert.equal((await s.postPlant({ id: 1, name: 'before' })).status, 503);

  other.exec('ROLLBACK');

  for (const id of failedIds) assert.equal(await storedPlant(s.store, BigInt(id)), undefined, `plant ${id} was refused but stored`);
  assert.equal(await s.store.countPlants(), 1);

  // The service recovered without a restart: new plants and retries of the refused ones succeed.
  const after = await Promise.all([
    s.postPlant({ id: 2, name: 'after' }),
    ...failedIds.slice(0, 5).map((id) => s.postPlant({ id, name: `retry-${id}` })),
  ]);
  for (const res of after) assert.equal(res.status, 200);
  assert.deepEqual(await storedPlant(s.store, 100n), { id: 100n, name: 'retry-100' });
  assert.equal(await s.store.countPlants(), 7);
});

test('a create that meets a briefly held lock (another process) waits for it and succeeds', async (t) => {
  const s = await startApp(t, { store: { busyTimeoutMs: 5_000 } });
  const file = s.databaseUrl.slice('sqlite:'.length);
  // Another process takes the write lock, holds it 400 ms and rolls back.
  await holdWriteLock(t, file, 400);
  const started = Date.now();
  const res = await s.postPlant({ id: 5, name: 'patient' });
  const waited = Date.now() - started;
  t.diagnostic(`waited ${waited} ms for the lock`);
  assert.equal(res.status, 200);
  assert.ok(waited >= 200, `the create did not wait for the lock (${waited} ms)`);
  assert.deepEqual(await storedPlant(s.store, 5n), { id: 5n, name: 'patient' });
});
