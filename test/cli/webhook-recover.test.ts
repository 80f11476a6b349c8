// `plant-store webhook recover ID --since TIME` on the database a server delivers from: it prints how many
// failed deliveries it queued, and the server's next poll sends them to the receiver (verified with
// `standardwebhooks`) with their webhook-id; a bad --since is a usage error (2), an unknown id a failure (1).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { migratedDatabaseUrl, runCli } from '../helpers/app.js';
import { testClock } from '../helpers/clock.js';
import { addSubscription, deliveriesOf, startDeliveryApp } from '../helpers/webhooks.js';
import { startReceiver } from '../helpers/receiver.js';

test('webhook recover prints the count it queued, and the server sends those deliveries again', async (t) => {
  const databaseUrl = await migratedDatabaseUrl(t);
  const env = { DATABASE_URL: databaseUrl };
  const clock = testClock();
  const s = await startDeliveryApp(t, { databaseUrl, dispatcher: { clock } });
  let secret = '';
  const rx = await startReceiver(t, () => secret, () => ({ status: 500 }));
  const sub = await addSubscription(s.store, rx.url, 'wh_cli');
  secret = sub.secret;
  const since = new Date(Date.now() - 1_000).toISOString();
  assert.equal(await s.postJson('{"id":1,"name":"fern"}'), 200);
  for (let i = 0; i < 20 && (await deliveriesOf(s.store, sub.id))[0]?.status !== 'failed'; i++) {
    await s.dispatcher.runOnce();
    clock.advance(12 * 3600_000);
  }
  assert.equal((await deliveriesOf(s.store, sub.id))[0]!.status, 'failed');
  assert.equal(rx.requests.length, 8);

  rx.reply = () => ({ status: 204 });
  const run = await runCli(['webhook', 'recover', sub.id, '--since', since], env);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.stdout, `Queued 1 delivery of wh_cli made since ${since} for another round; a running server sends them on its next poll.\n`);
  assert.equal(await s.dispatcher.runOnce(), 1);
  assert.equal(rx.requests.length, 9);
  assert.equal(rx.requests[8]!.headers['webhook-id'], rx.requests[0]!.headers['webhook-id']);
  assert.deepEqual(rx.problems, []);
  assert.equal((await deliveriesOf(s.store, sub.id))[0]!.status, 'succeeded');

  const bad = await runCli(['webhook', 'recover', sub.id, '--since', '2026-03-14 08:00'], env);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /^plant-store: `since` must be an RFC 3339 date-time with an offset, such as 2026-03-14T09:00:00Z; got "2026-03-14 08:00"\.$/m);
  const unknown = await runCli(['webhook', 'recover', 'wh_nope', '--since', since], env);
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /No webhook subscription with id wh_nope\./);
});
