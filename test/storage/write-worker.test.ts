// Creates commit on the write worker, so a commit that waits (for a lock, or for its fsync) does not stop
// the event loop: other requests are answered meanwhile, and the waiting create still succeeds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startApp } from '../helpers/app.js';
import { holdWriteLock } from './lock-holder.js';
import { eventually } from '../helpers/sleep.js';
import { storedPlant } from '../helpers/stored-plant.js';

test('while a create waits for a lock another process holds, reads are answered; then the create succeeds', async (t) => {
  const s = await startApp(t, { store: { busyTimeoutMs: 10_000 } });
  const file = s.databaseUrl.slice('sqlite:'.length);
  assert.equal((await s.postPlant({ id: 1, name: 'before' })).status, 200);

  await holdWriteLock(t, file, 1500);

  // The create is handed to the writer once the server has read its body.
  let createRead = false;
  s.app.server.on('request', (req) => req.method === 'POST' && req.on('end', () => (createRead = true)));
  let createdAt = 0;
  const create = s.postPlant({ id: 2, name: 'patient' }).then((res) => {
    createdAt = performance.now();
    return res;
  });
  await eventually(() => createRead, 'the create read by the server');
  const read = await fetch(`${s.url}/plants/1`, { headers: { authorization: `Bearer ${s.token.read}` } });
  const readAt = performance.now();
  assert.equal(read.status, 200);
  assert.deepEqual(await read.json(), { id: 1, name: 'before' });
  assert.equal(createdAt, 0, 'the read was answered only after the waiting create: the commit blocked the event loop');

  const res = await create;
  assert.equal(res.status, 200);
  t.diagnostic(`read answered ${(createdAt - readAt).toFixed(0)} ms before the create`);
  assert.deepEqual(await storedPlant(s.store, 2n), { id: 2n, name: 'patient' });
});
