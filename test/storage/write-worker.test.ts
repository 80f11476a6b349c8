// Every write runs on the write worker, so a write that waits (for a lock, or for its fsync) does not stop
// the event loop: other requests are answered meanwhile, and the waiting write still succeeds. Plant creates,
// and the other writes (subscriptions here) alike.
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

test('while subscription writes wait for a lock another process holds, reads go on being answered; then the writes succeed', async (t) => {
  const s = await startApp(t, { store: { busyTimeoutMs: 10_000 }, config: { webhookAllowedHosts: ['127.0.0.1'] } });
  const file = s.databaseUrl.slice('sqlite:'.length);
  const manage = (await s.tokens.create({ name: 'hooks', scopes: ['webhooks:manage', 'plants:read'] })).secret;
  const hooks = (path: string, method: string, body?: unknown) =>
    fetch(`${s.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${manage}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
  const first = (await (await hooks('/webhooks', 'POST', { url: 'http://127.0.0.1:9/a' })).json()) as { id: string };

  await holdWriteLock(t, file, 1500);
  const started = performance.now();
  let writesDone = false;
  const writes = Promise.all([hooks('/webhooks', 'POST', { url: 'http://127.0.0.1:9/b' }), hooks(`/webhooks/${first.id}`, 'DELETE')]).finally(() => (writesDone = true));
  // Reads one after another until the writes are answered: on an event loop that a write blocked, none would be.
  let reads = 0;
  while (!writesDone) {
    const read = await fetch(`${s.url}/webhooks`, { headers: { authorization: `Bearer ${manage}` } });
    assert.equal(read.status, 200);
    await read.arrayBuffer();
    if (!writesDone) reads++;
  }
  const [created, deleted] = await writes;
  assert.equal(created.status, 201);
  assert.equal(deleted.status, 204);
  const waited = performance.now() - started;
  t.diagnostic(`${reads} reads answered while the writes waited ${waited.toFixed(0)} ms for the lock`);
  assert.ok(waited >= 1000, `the writes did not wait for the lock (${waited.toFixed(0)} ms)`);
  assert.ok(reads >= 20, `only ${reads} reads were answered while the writes waited: a write blocked the event loop`);
  assert.deepEqual((await s.store.webhooks.listSubscriptions()).map((w) => w.url), ['http://127.0.0.1:9/b']);
});
