// The background services seen from the workers of a multi-process server (WORKERS=2): a feed reader on each
// worker wakes when an event is placed, and a retry asked of a worker is delivered before its scheduled try. On
// SQLite the primary places and delivers for the workers; the worker's own wiring (src/process/background.ts over its
// link to the primary, with the IPC channel stood in for) answers a 'placed' by waking its readers and sends
// nothing back, and forwards a retry's wake once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { join } from 'node:path';
import { createTokenService } from '../../src/auth/token-service.js';
import { createWorkerBackground } from '../../src/process/background.js';
import type { Envelope } from '../../src/kit/channel.js';
import { createWorkerLink } from '../../src/process/worker-link.js';
import { openStore } from '../../src/storage/open-store.js';
import { spawnServer, tempDir } from '../helpers/app.js';
import { eventually } from '../helpers/sleep.js';
import { addSubscription } from '../helpers/webhooks.js';
import { startReceiver } from '../helpers/receiver.js';
import { databaseWithToken, portOf } from '../helpers/cli.js';
import { fresh } from '../helpers/raw-request.js';

test('two workers: a waiting feed reader on each wakes when an event is placed; a retry asked of a worker is delivered before its scheduled try', async (t) => {
  const { databaseUrl, token } = await databaseWithToken(t);
  const { store } = await openStore(databaseUrl);
  let secret = '';
  // The first attempt fails (its retry is scheduled about 5 s later); the retry asked for succeeds.
  const receiver = await startReceiver(t, () => secret, (_req, n) => ({ status: n === 0 ? 500 : 204 }));
  let manage = '';
  try {
    secret = (await addSubscription(store, receiver.url, 'wh_retry', ['newPlant'])).secret;
    manage = (await createTokenService(store).create({ name: 'ops', scopes: ['webhooks:manage', 'metrics:read'] })).secret;
  } finally {
    await store.close();
  }
  const server = await spawnServer(t, { DATABASE_URL: databaseUrl, BOOTSTRAP_TOKEN: 'false', WORKERS: '2', WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' });
  await eventually(() => server.stdout().includes('plant-store is listening'), 'every worker listening', 20_000);
  const port = portOf(server.url);

  // Two readers on connections of their own, which the primary hands to the workers in turn.
  const readers = [0, 1].map(() => fresh(port, '/events?wait=20', token));
  const waiting = async () => Number(/^plant_store_events_waiting (\d+)$/m.exec((await fresh(port, '/metrics', manage)).body)?.[1]);
  await eventually(async () => (await waiting()) === 2, 'both readers waiting', 10_000, 20);
  const wrote = await fresh(port, '/plants', token, { method: 'POST', body: '{"id":1,"name":"fern"}' });
  assert.equal(wrote.status, 200, wrote.body);
  const written = Date.now();
  for (const reader of await Promise.all(readers)) {
    assert.equal(reader.status, 200);
    assert.deepEqual((JSON.parse(reader.body) as { type: string }[]).map((e) => e.type), ['newPlant']);
  }
  const woke = Date.now() - written;
  assert.ok(woke < 10_000, `the readers waited ${woke} ms after the write, as if nothing woke them`);
  t.diagnostic(`both readers answered ${woke} ms after the write`);

  await receiver.until((r) => r.requests.length === 1);
  let delivery: { id: string; status: string; nextAttemptAt: string | null; attempts: unknown[] } | undefined;
  // Recorded just after the receiver answered.
  const recorded = async () => {
    [delivery] = JSON.parse((await fresh(port, '/webhooks/wh_retry/deliveries', manage)).body) as (typeof delivery)[];
    return delivery?.attempts.length === 1;
  };
  await eventually(recorded, 'the attempt recorded', 10_000, 20).catch(() => {}); // the assertions below judge it
  assert.equal(delivery!.status, 'pending');
  const asked = Date.now();
  const retried = await fresh(port, `/webhooks/wh_retry/deliveries/${delivery!.id}/retry`, manage, { method: 'POST' });
  assert.equal(retried.status, 202, retried.body);
  await receiver.until((r) => r.requests.length === 2);
  const sentAt = receiver.requests[1]!.at;
  assert.ok(sentAt < Date.parse(delivery!.nextAttemptAt!) - 1_000, 'the retry waited for the scheduled try');
  t.diagnostic(`the retry was delivered ${sentAt - asked} ms after it was asked`);
  assert.deepEqual(receiver.problems, []);
  server.proc.kill('SIGTERM');
  assert.equal(await server.exited, 0);
});

test("a SQLite worker's services over its link (a shared writer is SQLite's on every run): a 'placed' from the primary wakes its feed readers and sends nothing back; a retry's wake goes once", async (t) => {
  const dir = tempDir(t);
  const channel = new EventEmitter() as EventEmitter & { connected: boolean; send: (m: unknown) => boolean; sent: Envelope[] };
  channel.connected = true;
  channel.sent = [];
  channel.send = (m) => (channel.sent.push(m as Envelope), true);
  const link = createWorkerLink(channel as never);
  // A SQLite file shared with a writer, as a worker opens it (the primary would have migrated it).
  const url = `sqlite:${join(dir, 'store.db')}`;
  await (await openStore(url)).store.close();
  const { store } = await openStore(url, { sharedWriter: link.writer });
  const services = createWorkerBackground({ store, observe: () => {}, tokens: createTokenService(store), deliveriesDue: () => link.deliveriesDue() });
  services.start();
  t.after(async () => {
    await services.stop();
    await store.close();
  });

  const reader = services.links.feed.next(5_000);
  channel.emit('message', { rpc: 0, m: 'placed', a: undefined } satisfies Envelope);
  assert.equal(await reader, 'events');
  services.links.eventsCommitted();
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(channel.sent, [], 'a placed message or a commit made the worker send something');

  services.links.deliveriesDue();
  assert.deepEqual(channel.sent, [{ rpc: 0, m: 'wakeDispatcher', a: undefined }]);
});
