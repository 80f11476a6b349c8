// WEBHOOK_ALLOWED_HOSTS read by the CLI and the server each from its own environment, with one rule: a
// host the CLI allowed but the delivering server does not is refused at the first delivery, which disables
// the subscription with a reason naming the setting (not 28 hours of failing retries). `webhook enable`
// then re-enables it with its secret, and `webhook retry` sends a failed delivery again, or a pending one
// waiting for its next try at once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { migratedDatabaseUrl, runCli } from '../helpers/app.js';
import { startDeliveryApp } from '../helpers/webhooks.js';
import { startReceiver } from '../helpers/receiver.js';

interface Listed {
  id: string;
  active: boolean;
  disabledReason?: string;
}
interface DeliveryJson {
  id: string;
  status: string;
  attempts: Array<{ statusCode?: number; error?: string }>;
}

test('a host allowed for the CLI only: the server refuses it once and disables the subscription, naming WEBHOOK_ALLOWED_HOSTS; enable and retry then deliver with the same secret', async (t) => {
  const databaseUrl = await migratedDatabaseUrl(t);
  const env = { DATABASE_URL: databaseUrl };
  let secret = '';
  let answers = 0;
  // The first delivery that reaches it fails (500), every later one succeeds.
  const rx = await startReceiver(t, () => secret, () => (answers++ === 0 ? { status: 500 } : { status: 204 }));

  const add = await runCli(['webhook', 'add', rx.url], { ...env, WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' });
  assert.equal(add.code, 0, add.stderr);
  secret = add.stdout.trimEnd().split('\n').at(-1)!;
  const id = /\b(wh_[A-Za-z0-9_-]+)/.exec(add.stdout)![1]!;
  // The CLI says the server needs the same list.
  assert.match(add.stderr, /127\.0\.0\.1 is accepted because WEBHOOK_ALLOWED_HOSTS lists it\. The server that sends the deliveries must list it/);

  // A server whose WEBHOOK_ALLOWED_HOSTS lacks 127.0.0.1.
  const strict = await startDeliveryApp(t, { databaseUrl, config: { webhookAllowedHosts: [] } });
  assert.equal(await strict.postJson('{"id":1,"name":"fern"}'), 200);
  assert.equal(await strict.dispatcher.runOnce(), 1);
  assert.equal(rx.requests.length, 0, 'nothing reached the refused address');
  const [sub] = JSON.parse((await runCli(['webhook', 'list', '--json'], env)).stdout) as Listed[];
  assert.equal(sub!.active, false);
  assert.match(sub!.disabledReason ?? '', /refusing to connect: 127\.0\.0\.1 is a loopback address, and this server's WEBHOOK_ALLOWED_HOSTS does not list 127\.0\.0\.1/);
  const table = await runCli(['webhook', 'list'], env);
  assert.match(table.stdout, /no \(refusing to connect: .*WEBHOOK_ALLOWED_HOSTS/);
  const [refused] = JSON.parse((await runCli(['webhook', 'deliveries', id, '--json'], env)).stdout) as DeliveryJson[];
  assert.equal(refused!.status, 'failed', 'no retries of a refused address');
  assert.equal(refused!.attempts.length, 1);
  // A disabled subscription gets no new events, and no retry until it is enabled.
  assert.equal(await strict.postJson('{"id":2,"name":"moss"}'), 200);
  assert.equal((JSON.parse((await runCli(['webhook', 'deliveries', id, '--json'], env)).stdout) as DeliveryJson[]).length, 1);
  const early = await runCli(['webhook', 'retry', id, refused!.id], env);
  assert.equal(early.code, 1);
  assert.match(early.stderr, new RegExp(`Webhook subscription ${id} is disabled \\(refusing to connect: .*\\)\\. Re-enable it first with \`npx plant-store webhook enable ${id}\`\\.`));

  const enabled = await runCli(['webhook', 'enable', id], env);
  assert.equal(enabled.code, 0, enabled.stderr);
  assert.match(enabled.stdout, new RegExp(`Webhook subscription ${id} to ${rx.url.replace(/[.]/g, '\\.')} is enabled again, with the signing secret it had\\.`));
  const [active] = JSON.parse((await runCli(['webhook', 'list', '--json'], env)).stdout) as Listed[];
  assert.equal(active!.active, true);
  assert.equal('disabledReason' in active!, false);

  // The server, now with the same list: the failed delivery is sent again (its new round fails once with 500
  // and waits 5 s), and a retry of the pending one sends it at once, without moving any clock.
  const fixed = await startDeliveryApp(t, { databaseUrl, config: { webhookAllowedHosts: ['127.0.0.1'] } });
  const again = await runCli(['webhook', 'retry', id, refused!.id], env);
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stdout, new RegExp(`Delivery ${refused!.id} of event \\S+ is due now`));
  assert.equal(await fixed.dispatcher.runOnce(), 1);
  const [waiting] = JSON.parse((await runCli(['webhook', 'deliveries', id, '--json'], env)).stdout) as DeliveryJson[];
  assert.equal(waiting!.status, 'pending');
  assert.equal(waiting!.attempts.at(-1)!.statusCode, 500);
  assert.equal(await fixed.dispatcher.runOnce(), 0, 'the next try is not due yet');
  const now = await runCli(['webhook', 'retry', id, refused!.id], env);
  assert.equal(now.code, 0, now.stderr);
  assert.equal(await fixed.dispatcher.runOnce(), 1);
  const [done] = JSON.parse((await runCli(['webhook', 'deliveries', id, '--json'], env)).stdout) as DeliveryJson[];
  assert.equal(done!.status, 'succeeded');
  assert.deepEqual(done!.attempts.map((a) => a.statusCode ?? null), [null, 500, 204]);
  // Signed with the secret printed when it was added: the receiver verified both requests.
  assert.equal(rx.requests.length, 2);
  assert.deepEqual(rx.problems, []);
  // A succeeded delivery is sent again: the receiver gets it a third time.
  const resent = await runCli(['webhook', 'retry', id, refused!.id], env);
  assert.equal(resent.code, 0, resent.stderr);
  assert.equal(await fixed.dispatcher.runOnce(), 1);
  assert.equal(rx.requests.length, 3);
  assert.equal(rx.requests[2]!.headers['webhook-id'], rx.requests[1]!.headers['webhook-id']);
});
