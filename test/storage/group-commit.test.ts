// Group commit: many concurrent creates are all acknowledged and all stored, they share commits (far fewer
// WAL commits than plants), and duplicates inside one group are decided in order like sequential requests.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { errorOf, startApp } from '../helpers/app.js';
import { storedPlant } from '../helpers/stored-plant.js';

/** Number of commit frames in a WAL file whose frames all belong to the current WAL generation. */
function walCommits(wal: Buffer): number {
  if (wal.length < 32) return 0;
  const pageSize = wal.readUInt32BE(8);
  const salt1 = wal.readUInt32BE(16);
  const salt2 = wal.readUInt32BE(20);
  let commits = 0;
  for (let at = 32; at + 24 + pageSize <= wal.length; at += 24 + pageSize) {
    if (wal.readUInt32BE(at + 8) !== salt1 || wal.readUInt32BE(at + 12) !== salt2) break;
    if (wal.readUInt32BE(at + 4) !== 0) commits++;
  }
  return commits;
}

async function pool<T>(n: number, concurrency: number, task: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = new Array(n);
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        const i = next++;
        out[i] = await task(i);
      }
    }),
  );
  return out;
}

test('500 concurrent creates (100 at a time) are all 200, all stored, in far fewer commits than plants', async (t) => {
  const s = await startApp(t);
  const file = s.databaseUrl.slice('sqlite:'.length);
  // Start from an empty WAL so the frames counted below are the burst's.
  const probe = new Database(file);
  t.after(() => probe.close());
  probe.pragma('wal_checkpoint(TRUNCATE)');

  const N = 500;
  const base = 2n ** 62n;
  const statuses = await pool(N, 100, async (i) => {
    const res = await s.postPlant(`{"id":${base + BigInt(i)},"name":"p${i}","tag":"t${i % 7}"}`);
    await res.arrayBuffer();
    return res.status;
  });
  assert.deepEqual(statuses.filter((x) => x !== 200), []);
  assert.equal(await s.store.countPlants(), N);
  for (const i of [0, 1, 250, N - 1]) {
    assert.deepEqual(await storedPlant(s.store, base + BigInt(i)), { id: base + BigInt(i), name: `p${i}`, tag: `t${i % 7}` });
  }

  // Every commit ends with one commit frame in the WAL (a frame whose "database size" field is non-zero),
  // so counting them counts transactions. The burst stays below the 1000-page auto-checkpoint.
  const commits = walCommits(readFileSync(`${file}-wal`));
  t.diagnostic(`${N} plants acknowledged in ${commits} commits`);
  assert.ok(commits > 0, 'the burst wrote to the WAL');
  // One commit per request would be exactly N; a loaded machine groups more, an idle one less.
  assert.ok(commits <= N / 2, `expected grouped commits, but ${N} plants took ${commits} commits`);
});

test('identical concurrent creates of one id are all 200 (replays) and store one row', async (t) => {
  const s = await startApp(t);
  const results = await Promise.all(Array.from({ length: 30 }, () => s.postPlant('{"id":77,"name":"same","tag":"x"}')));
  for (const res of results) {
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { name: 'same', tag: 'x' });
  }
  assert.equal(await s.store.countPlants(), 1);
});

test('concurrent creates of one id with different names: exactly one 200, the rest 409, and the stored plant is the winner', async (t) => {
  const s = await startApp(t);
  const results = await Promise.all(Array.from({ length: 30 }, (_, i) => s.postPlant({ id: 78, name: `n${i}` })));
  const winners: string[] = [];
  for (const res of results) {
    if (res.status === 200) winners.push(((await res.json()) as { name: string }).name);
    else {
      assert.equal(res.status, 409);
      await errorOf(res);
    }
  }
  assert.equal(winners.length, 1);
  assert.deepEqual(await storedPlant(s.store, 78n), { id: 78n, name: winners[0] });
  assert.equal(await s.store.countPlants(), 1);
});
