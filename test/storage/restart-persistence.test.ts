// Plants created on a real `plant-store serve` are still there after SIGTERM and a restart on the same file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { errorOf, spawnServer } from '../helpers/app.js';
import { openStore } from '../../src/storage/open-store.js';
import { databaseWithToken } from '../helpers/cli.js';
import { storedPlant } from '../helpers/stored-plant.js';

const PLANTS = [
  { id: '1', name: 'fern', tag: 'green' },
  { id: '9007199254740993', name: 'above 2^53' },
  { id: '9223372036854775807', name: 'int64 max', tag: 'edge' },
  { id: '-9223372036854775808', name: 'int64 min' },
  { id: '0', name: 'zero', tag: '' },
];

const body = (p: { id: string; name: string; tag?: string }) =>
  `{"id":${p.id},"name":${JSON.stringify(p.name)}${p.tag === undefined ? '' : `,"tag":${JSON.stringify(p.tag)}`}}`;

test('plants survive SIGTERM and a restart: replays answer 200, different names 409, and the file holds them exactly', async (t) => {
  const { databaseUrl, token } = await databaseWithToken(t);
  const env = { DATABASE_URL: databaseUrl, BOOTSTRAP_TOKEN: 'false' };
  const post = (url: string, json: string) =>
    fetch(`${url}/plants`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: json });

  const first = await spawnServer(t, env);
  for (const p of PLANTS) {
    const res = await post(first.url, body(p));
    assert.equal(res.status, 200, `create ${p.id}: ${await res.clone().text()}`);
  }
  first.proc.kill('SIGTERM');
  assert.equal(await first.exited, 0, first.stderr());

  const second = await spawnServer(t, env);
  for (const p of PLANTS) {
    const replay = await post(second.url, body(p));
    assert.equal(replay.status, 200, `replay of ${p.id} after restart`);
    assert.equal(replay.headers.get('location'), `/plants/${p.id}`);
    assert.deepEqual(await replay.json(), p.tag === undefined ? { name: p.name } : { name: p.name, tag: p.tag });

    const conflict = await post(second.url, body({ ...p, name: `${p.name} (other)` }));
    assert.equal(conflict.status, 409, `different name for ${p.id} after restart`);
    assert.equal((await errorOf(conflict)).error, 409);
  }
  second.proc.kill('SIGTERM');
  assert.equal(await second.exited, 0, second.stderr());

  // The file itself, read by the storage layer with nothing else running.
  const { store, migrations } = await openStore(databaseUrl);
  t.after(() => store.close());
  assert.ok(migrations.length > 0 && migrations.every((m) => m.status === 'already-applied'));
  assert.equal(await store.countPlants(), PLANTS.length);
  for (const p of PLANTS) {
    const expected = p.tag === undefined ? { id: BigInt(p.id), name: p.name } : { id: BigInt(p.id), name: p.name, tag: p.tag };
    assert.deepEqual(await storedPlant(store, BigInt(p.id)), expected);
  }
  // Neighbours of the large ids were not created by rounding.
  assert.equal(await storedPlant(store, 9007199254740992n), undefined);
  assert.equal(await storedPlant(store, 9007199254740994n), undefined);
});
