// kill -9 between the commit and the delivery: the real server (a child process) acknowledges a plant, its
// dispatcher has the delivery in flight to a receiver that has not answered, and the process dies. After a
// restart on the same file the event is delivered, with the same webhook-id, its signature valid.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawnServer } from '../helpers/app.js';
import { openStore } from '../../src/storage/open-store.js';
import { databaseWithToken, portOf } from '../helpers/cli.js';
import { answered, postRaw } from '../helpers/raw-request.js';
import { addSubscription, withoutVersion } from '../helpers/webhooks.js';
import { startReceiver, type Reply } from '../helpers/receiver.js';

/**
 * A database with a token and a subscription (`events`, default all) to a receiver that takes requests and
 * never answers until `answer()`, so a delivery is in flight when the server dies. The server's settings make
 * the lease timeout + 5 s: after a kill the delivery is due again within about 6 s.
 */
async function inFlightScene(t: TestContext, subscriptionId: string, events?: string[]) {
  const { databaseUrl, token } = await databaseWithToken(t);
  let secret = '';
  let mode: 'hang' | 'answer' = 'hang';
  const rx = await startReceiver(t, () => secret, (): Reply => (mode === 'hang' ? 'hang' : { status: 200 }));
  const { store } = await openStore(databaseUrl);
  secret = (await addSubscription(store, rx.url, subscriptionId, events)).secret;
  await store.close();
  const env = { DATABASE_URL: databaseUrl, BOOTSTRAP_TOKEN: 'false', WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', WEBHOOK_TIMEOUT_MS: '1000' };
  return { databaseUrl, token, rx, env, answer: () => void (mode = 'answer') };
}

test('kill -9 after the commit, before the delivery completed: the restarted server delivers the event', async (t) => {
  const { databaseUrl, token, rx, env, answer } = await inFlightScene(t, 'wh_crash');
  const first = await spawnServer(t, env);
  const body = '{"id":9007199254740993,"name":"survivor","tag":"crash"}';
  const res = answered(await postRaw(portOf(first.url), token, body));
  assert.equal(res.status, 200, res.body);
  await rx.until((r) => r.requests.length >= 1, 10_000);
  const firstAttempt = rx.requests[0]!;
  assert.equal(withoutVersion(firstAttempt.body), body);
  first.proc.kill('SIGKILL');
  assert.equal(await first.exited, 'SIGKILL');

  // Nothing was recorded as done: the delivery is still pending, leased by the dead process.
  {
    const { store } = await openStore(databaseUrl);
    const [d] = await store.webhooks.listDeliveries('wh_crash', 10);
    assert.equal(d?.status, 'pending');
    assert.equal(d?.eventId, firstAttempt.headers['webhook-id']);
    await store.close();
  }

  answer();
  const t0 = Date.now();
  const second = await spawnServer(t, env);
  await rx.until((r) => r.requests.length >= 2, 15_000);
  t.diagnostic(`redelivered ${Date.now() - t0} ms after the restart`);
  const again = rx.requests[1]!;
  assert.equal(again.headers['webhook-id'], firstAttempt.headers['webhook-id'], 'the same event id, so the receiver can de-duplicate');
  assert.equal(withoutVersion(again.body), body);
  assert.equal(again.verifyError, undefined);
  assert.deepEqual(rx.problems, []);
  assert.equal(rx.byId.size, 1);

  second.proc.kill('SIGTERM');
  assert.equal(await second.exited, 0);
  const { store } = await openStore(databaseUrl);
  t.after(() => store.close());
  const [d] = await store.webhooks.listDeliveries('wh_crash', 10);
  assert.equal(d?.status, 'succeeded');
  assert.equal(d?.attempts.at(-1)?.statusCode, 200);
});

test('events committed while the receiver is down are delivered after a kill -9 and restart', async (t) => {
  const { databaseUrl, token } = await databaseWithToken(t);
  let secret = '';
  const rx = await startReceiver(t, () => secret);
  const receiverUrl = rx.url;
  {
    const { store } = await openStore(databaseUrl);
    secret = (await addSubscription(store, receiverUrl, 'wh_down')).secret;
    await store.close();
  }
  // The receiver is down while the plants are created: the first attempts fail and wait for their retry.
  await rx.close();
  const env = { DATABASE_URL: databaseUrl, BOOTSTRAP_TOKEN: 'false', WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', WEBHOOK_TIMEOUT_MS: '1000' };
  const first = await spawnServer(t, env);
  const ids = [1, 2, 3, 4, 5];
  for (const id of ids) assert.equal(answered(await postRaw(portOf(first.url), token, `{"id":${id},"name":"p${id}"}`)).status, 200);
  first.proc.kill('SIGKILL');
  await first.exited;

  // The receiver comes back on the same port; the server restarts on the same file.
  const back = await startReceiverOnPort(t, rx.port, () => secret);
  const second = await spawnServer(t, env);
  await back.until((r) => r.byId.size >= ids.length, 15_000);
  assert.deepEqual(back.problems, []);
  assert.deepEqual([...back.byId.values()].map((r) => JSON.parse(r.body).id).sort(), ids);
  second.proc.kill('SIGTERM');
  assert.equal(await second.exited, 0);
});

test('kill -9 with plantUpdated and plantDeleted events in flight: the restarted server delivers both, with their versions', async (t) => {
  // Only changes: the creates below make no event for this subscription.
  const { token, rx, env, answer } = await inFlightScene(t, 'wh_changes', ['plantUpdated', 'plantDeleted']);
  const first = await spawnServer(t, env);
  const port = portOf(first.url);
  for (const id of [1, 2]) assert.equal(answered(await postRaw(port, token, `{"id":${id},"name":"p${id}"}`)).status, 200);
  const auth = { authorization: `Bearer ${token}` };
  const put = await fetch(`${first.url}/plants/1`, { method: 'PUT', headers: { ...auth, 'content-type': 'application/json' }, body: '{"name":"renamed","tag":"t"}' });
  assert.equal(put.status, 200, await put.clone().text());
  const deleted = await fetch(`${first.url}/plants/2`, { method: 'DELETE', headers: auth });
  assert.equal(deleted.status, 204);
  await rx.until((r) => r.requests.length >= 1, 10_000);
  first.proc.kill('SIGKILL');
  assert.equal(await first.exited, 'SIGKILL');

  const beforeRestart = rx.requests.length;
  answer();
  const second = await spawnServer(t, env);
  // Both events reach the receiver again after the restart (whatever was in flight was never recorded as done).
  const after = () => new Set(rx.requests.slice(beforeRestart).map((r) => String(r.headers['webhook-id'])));
  await rx.until((r) => r.byId.size >= 2 && [...r.byId.keys()].every((id) => after().has(id)), 15_000);
  assert.deepEqual(rx.problems, [], 'every attempt verifies; a repeat carries the same body');
  const bodies = [...rx.byId.values()].map((r) => r.body).sort();
  const version = put.headers.get('etag')!.replaceAll('"', '');
  assert.equal(bodies.length, 2);
  assert.equal(bodies[0], `{"id":1,"name":"renamed","tag":"t","version":${version}}`);
  assert.match(bodies[1]!, /^\{"id":2,"version":\d+\}$/);
  second.proc.kill('SIGTERM');
  assert.equal(await second.exited, 0);
});

/** A receiver on the port a subscription already names (just released by the previous receiver). */
async function startReceiverOnPort(t: Parameters<typeof startReceiver>[0], port: number, secret: () => string) {
  return startReceiver(t, secret, undefined, port);
}
