// GET /status from an operator's side: the version, the process's start, the workers, the store's engine and its
// size growing with what is written, and each replica's state and lag as serve last wrote them beside the store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { errorOf, startApp } from '../helpers/app.js';
import { VERSION } from '../../src/health/version.js';
import { databaseFile } from '../../src/storage/engines.js';
import { parseReplicaUrls } from '../../src/replication/replica-urls.js';
import { statusFile } from '../../src/replication/replication-status.js';

interface Status {
  version: string;
  startedAt: string;
  uptimeSeconds: number;
  workers: number;
  store: { engine: string; sizeBytes?: number };
  replicas: { name: string; state: string; lagSeconds: number; lastSyncAt?: string }[];
}

test('GET /status: version, start, workers, the store and its size; metrics:read only', async (t) => {
  const s = await startApp(t);
  const metrics = (await s.tokens.create({ name: 'ops', scopes: ['metrics:read'] })).secret;
  const get = async () => {
    const res = await fetch(`${s.url}/status`, { headers: { authorization: `Bearer ${metrics}` } });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('cache-control'), 'no-store');
    return (await res.json()) as Status;
  };
  const first = await get();
  assert.equal(first.version, VERSION);
  assert.ok(Date.parse(first.startedAt) <= Date.now() && first.uptimeSeconds >= 0, JSON.stringify(first));
  assert.equal(first.workers, 1);
  assert.equal(first.store.engine, s.store.engine);
  assert.deepEqual(first.replicas, []);
  assert.ok((first.store.sizeBytes ?? 0) > 0, 'a store in a file, or a database server, has a size');
  for (let i = 1; i <= 300; i++) assert.equal((await s.postPlant({ id: i, name: `a plant whose name takes some room ${'x'.repeat(200)}` })).status, 200);
  assert.ok((await get()).store.sizeBytes! > first.store.sizeBytes!, 'the size grows with what is written');

  assert.equal((await fetch(`${s.url}/status`)).status, 401);
  const refused = await fetch(`${s.url}/status`, { headers: { authorization: `Bearer ${s.token.all}` } });
  assert.equal(refused.status, 403);
  assert.match((await errorOf(refused)).message, /metrics:read/);
});

test("GET /status on a replicated SQLite store: each replica's state from what serve wrote, unknown once serve stops writing", async (t) => {
  if (process.env.PLANT_STORE_TEST_STORE === 'postgres') return t.skip('replication is SQLite only');
  const replicaUrls = parseReplicaUrls('file:///var/tmp/plant-store-status-a,file:///var/tmp/plant-store-status-b');
  const s = await startApp(t, { config: { replicaUrls } });
  const file = databaseFile(s.databaseUrl);
  if (file === undefined) return t.skip('a store in memory has no replicas');
  const metrics = (await s.tokens.create({ name: 'ops', scopes: ['metrics:read'] })).secret;
  const replicas = async () => ((await (await fetch(`${s.url}/status`, { headers: { authorization: `Bearer ${metrics}` } })).json()) as Status).replicas;

  assert.deepEqual(await replicas(), [
    { name: 'file', state: 'unknown', lagSeconds: 0 },
    { name: 'file-2', state: 'unknown', lagSeconds: 0 },
  ], 'nothing written yet by serve');
  const syncedAt = Date.now() - 700;
  writeFileSync(statusFile(file), JSON.stringify({ at: Date.now(), replicas: { file: { lagSeconds: 0, lastSyncAt: syncedAt }, 'file-2': { lagSeconds: 12.34 } } }));
  assert.deepEqual(await replicas(), [
    { name: 'file', state: 'synced', lagSeconds: 0, lastSyncAt: new Date(syncedAt).toISOString() },
    { name: 'file-2', state: 'behind', lagSeconds: 12.3 },
  ]);
  writeFileSync(statusFile(file), JSON.stringify({ at: Date.now() - 60_000, replicas: { file: { lagSeconds: 0 }, 'file-2': { lagSeconds: 0 } } }));
  assert.deepEqual((await replicas()).map((r) => r.state), ['unknown', 'unknown'], 'a status a minute old says nothing of now');
});
