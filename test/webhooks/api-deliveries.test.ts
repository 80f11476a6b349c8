// Deliveries as the subscription API shows them, driven through a real server and a real receiver on
// 127.0.0.1: attempts with status codes and errors, the next try, 410 disabling the subscription, and manual
// retry (202 for a failed or succeeded delivery, sent again, or a pending one waiting for its next try, which is
// then sent at once; 409 for one being sent, or a disabled subscription). The schedule runs on a controllable
// clock, not real hours.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { RETRY_SCHEDULE_MS } from '../../src/webhooks/retry-policy.js';
import type { PlantStoreClient, WebhookDelivery } from '@plant-store/client';
import { startApp } from '../helpers/app.js';
import { clientError, clientFor } from '../helpers/client.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { subscribe, withoutVersion } from '../helpers/webhooks.js';
import { testClock } from '../helpers/clock.js';
import { eventually } from '../helpers/sleep.js';

/**
 * The tests' receiver (test/helpers/receiver.ts) answering `status`, at /hooks/plants: it verifies each delivery
 * with the secret of the subscription made to it (subscribe sets it) and checks it against the document's
 * `webhooks` section; the test fails if one does not verify or conform.
 */
async function receiver(t: TestContext, status = 200) {
  const hook = { url: '', secret: '', rx: undefined as unknown as Receiver };
  hook.rx = await startReceiver(t, () => hook.secret, () => ({ status, headers: { 'content-type': 'text/plain' }, body: 'ok' }));
  hook.url = `${hook.rx.url}/plants`;
  t.after(() => assert.deepEqual(hook.rx.problems, [], 'every delivery verifies and conforms to the webhooks section'));
  return hook;
}

async function deliveries(hooks: PlantStoreClient, id: string, limit?: number): Promise<WebhookDelivery[]> {
  const { data, response } = await hooks.GET('/webhooks/{id}/deliveries', { params: { path: { id }, query: limit === undefined ? {} : { limit } } });
  assert.equal(response.status, 200);
  return data!;
}

function retry(hooks: PlantStoreClient, id: string, deliveryId: string) {
  return hooks.POST('/webhooks/{id}/deliveries/{deliveryId}/retry', { params: { path: { id, deliveryId } } });
}

/** A typed client with a new webhooks:manage (and plants:read, to subscribe) token of this app. */
async function manageClient(s: Awaited<ReturnType<typeof startApp>>): Promise<PlantStoreClient> {
  return clientFor(s, (await s.tokens.create({ name: 'hooks', scopes: ['webhooks:manage', 'plants:read'] })).secret);
}

test('a created plant shows up as a succeeded delivery with its attempt; the receiver verifies the signature', async (t) => {
  const s = await startApp(t, { config: { webhookAllowedHosts: ['127.0.0.1'] } });
  const call = await manageClient(s);
  const plants = clientFor(s, s.token.write);
  const r = await receiver(t);
  const sub = await subscribe(call, r);
  assert.deepEqual(await deliveries(call, sub.id), []);

  const before = Date.now();
  // Raw: a string id is refused, no event (the client would not send one).
  assert.equal((await s.postPlant({ id: 9223372036854775807n.toString(), name: 'fern', tag: 'green' })).status, 400);
  assert.equal((await plants.POST('/plants', { body: { id: 9223372036854775807n, name: 'fern', tag: 'green' } })).response.status, 200);
  const [delivery] = await eventually(async () => {
    const list = await deliveries(call, sub.id);
    return list.length === 1 && list[0]!.status === 'succeeded' && list;
  }, 'a succeeded delivery', 10_000, 20);
  assert.equal(r.rx.requests.length, 1);
  const got = r.rx.requests[0]!;
  assert.equal(withoutVersion(got.body), '{"id":9223372036854775807,"name":"fern","tag":"green"}');
  assert.equal(got.headers['webhook-id'], delivery!.eventId);
  // Verified independently, with the reference library and the secret shown at creation.
  new StandardWebhook(sub.secret).verify(got.body, {
    'webhook-id': String(got.headers['webhook-id']),
    'webhook-timestamp': String(got.headers['webhook-timestamp']),
    'webhook-signature': String(got.headers['webhook-signature']),
  });

  assert.match(delivery!.id, /\S/);
  assert.equal('nextAttemptAt' in delivery!, false);
  assert.ok(Date.parse(delivery!.createdAt) >= before - 1_000);
  assert.equal(delivery!.attempts.length, 1);
  const attempt = delivery!.attempts[0]!;
  assert.equal(attempt.statusCode, 200);
  assert.equal('error' in attempt, false);
  assert.ok(Number.isInteger(attempt.durationMs) && attempt.durationMs >= 0);
  assert.ok(Date.parse(attempt.at) >= before - 1_000);

  // An idempotent replay of the plant makes no second delivery.
  // A delivery is written in the create's own transaction, so the 200 settles whether there is a second.
  assert.equal((await plants.POST('/plants', { body: { id: 9223372036854775807n, name: 'fern', tag: 'green' } })).response.status, 200);
  assert.equal((await deliveries(call, sub.id)).length, 1);
});

test('deliveries are listed newest first and limit bounds the page', async (t) => {
  const clock = testClock();
  const s = await startApp(t, { clock, config: { webhookAllowedHosts: ['127.0.0.1'] } });
  const call = await manageClient(s);
  const plants = clientFor(s, s.token.write);
  const r = await receiver(t);
  const sub = await subscribe(call, r);
  for (let id = 1; id <= 3; id++) {
    assert.equal((await plants.POST('/plants', { body: { id: BigInt(id), name: `plant ${id}` } })).response.status, 200);
    // Creation times are kept to the millisecond: each delivery made, then the clock moved past it.
    await eventually(async () => r.rx.requests.length === id, `delivery ${id}`, 10_000, 20);
    clock.advance(3);
  }
  const all = await eventually(async () => {
    const list = await deliveries(call, sub.id);
    return list.every((d) => d.status === 'succeeded') && list.length === 3 && list;
  }, 'three succeeded deliveries', 10_000, 20);
  const bodies = new Map(r.rx.requests.map((x) => [String(x.headers['webhook-id']), x.body]));
  assert.deepEqual(
    all.map((d) => withoutVersion(bodies.get(d.eventId)!)),
    ['{"id":3,"name":"plant 3"}', '{"id":2,"name":"plant 2"}', '{"id":1,"name":"plant 1"}'],
  );
  assert.deepEqual(await deliveries(call, sub.id, 2), all.slice(0, 2));
  assert.deepEqual(await deliveries(call, sub.id, 1000), all);
});

test('a failing receiver leaves the delivery pending with the attempt, its status code and the next try', async (t) => {
  const s = await startApp(t, { config: { webhookAllowedHosts: ['127.0.0.1'] } });
  const call = await manageClient(s);
  const plants = clientFor(s, s.token.write);
  const r = await receiver(t, 500);
  const sub = await subscribe(call, r);
  assert.equal((await plants.POST('/plants', { body: { id: 1n, name: 'fern' } })).response.status, 200);
  const [d] = await eventually(async () => {
    const list = await deliveries(call, sub.id);
    return list[0]?.attempts.length === 1 && list;
  }, 'an attempt', 10_000, 20);
  assert.equal(d!.status, 'pending');
  assert.equal(d!.attempts[0]!.statusCode, 500);
  assert.match(d!.attempts[0]!.error ?? '', /500/);
  // The first retry is due about 5 s after the attempt (+-10 % jitter).
  const wait = Date.parse(d!.nextAttemptAt!) - Date.parse(d!.attempts[0]!.at);
  assert.ok(wait >= 4_400 && wait <= 5_600 + d!.attempts[0]!.durationMs, `next attempt after ${wait} ms`);
});

test('a pending delivery waiting for its next try is sent at once on retry (202), its round going on; not while it is being sent (409); once it succeeded, sent again with its webhook-id', async (t) => {
  const s = await startWithClock(t);
  const r = await receiver(t, 500);
  const sub = await subscribe(s.call, r);
  assert.equal((await s.write.POST('/plants', { body: { id: 5n, name: 'sage' } })).response.status, 200);
  assert.equal(await s.dispatcher.runOnce(), 1);
  const [waiting] = await deliveries(s.call, sub.id);
  assert.equal(waiting!.status, 'pending');
  assert.equal(await s.dispatcher.runOnce(), 0, 'the next try is not due yet');

  const retried = await retry(s.call, sub.id, waiting!.id);
  assert.equal(retried.response.status, 202);
  assert.equal(retried.data!.status, 'pending');
  assert.ok(Date.parse(retried.data!.nextAttemptAt!) < Date.parse(waiting!.nextAttemptAt!), 'due earlier than its scheduled try');
  assert.equal(retried.data!.attempts.length, 1, 'the history is kept');
  assert.equal(await s.dispatcher.runOnce(), 1, 'sent without moving the clock');
  const [second] = await deliveries(s.call, sub.id);
  assert.equal(second!.attempts.length, 2);
  // The round goes on: the next try is the schedule's second delay (5 min), not its first.
  const gap = Date.parse(second!.nextAttemptAt!) - Date.parse(second!.attempts[1]!.at);
  assert.ok(gap >= RETRY_SCHEDULE_MS[1]! * 0.9 - 1_000 && gap <= RETRY_SCHEDULE_MS[1]! * 1.1 + 1_000, `next try after ${gap} ms`);

  // Caught while an attempt is in flight (its lease is live): 409, and the attempt is not disturbed.
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  r.rx.reply = () => gate.then(() => ({ status: 204 }));
  assert.equal((await retry(s.call, sub.id, waiting!.id)).response.status, 202);
  const inFlight = s.dispatcher.runOnce();
  await eventually(async () => r.rx.requests.length === 3, 'the attempt to arrive', 10_000, 20);
  assert.match(clientError(await retry(s.call, sub.id, waiting!.id), 409).message, /being sent/);
  release();
  assert.equal(await inFlight, 1);
  const [done] = await deliveries(s.call, sub.id);
  assert.equal(done!.status, 'succeeded');
  // A succeeded delivery is sent again, with the same webhook-id.
  assert.equal((await retry(s.call, sub.id, waiting!.id)).response.status, 202);
  assert.equal(await s.dispatcher.runOnce(), 1);
  assert.equal(r.rx.requests.length, 4);
  assert.equal(r.rx.requests[3]!.headers['webhook-id'], r.rx.requests[2]!.headers['webhook-id']);
  const [again] = await deliveries(s.call, sub.id);
  assert.equal(again!.status, 'succeeded');
});

test('a receiver that cannot be reached records the connection error and no status code', async (t) => {
  const s = await startApp(t, { config: { webhookAllowedHosts: ['127.0.0.1'] } });
  const call = await manageClient(s);
  const plants = clientFor(s, s.token.write);
  // A port that was just free: nothing listens there.
  const r = await receiver(t);
  const sub = await subscribe(call, r.url.replace(/:\d+\//, ':1/'));
  assert.equal((await plants.POST('/plants', { body: { id: 1n, name: 'fern' } })).response.status, 200);
  const [d] = await eventually(async () => {
    const list = await deliveries(call, sub.id);
    return list[0]?.attempts.length === 1 && list;
  }, 'an attempt', 10_000, 20);
  assert.equal(d!.status, 'pending');
  assert.equal('statusCode' in d!.attempts[0]!, false);
  assert.match(d!.attempts[0]!.error ?? '', /connect|ECONNREFUSED/i);
  assert.ok(d!.nextAttemptAt);
});

test('410 Gone disables the subscription (active false, disabledReason); its delivery cannot be retried (409)', async (t) => {
  const s = await startApp(t, { config: { webhookAllowedHosts: ['127.0.0.1'] } });
  const call = await manageClient(s);
  const plants = clientFor(s, s.token.write);
  const r = await receiver(t, 410);
  const sub = await subscribe(call, r);
  assert.equal((await plants.POST('/plants', { body: { id: 1n, name: 'fern' } })).response.status, 200);
  const [d] = await eventually(async () => {
    const list = await deliveries(call, sub.id);
    return list[0]?.status === 'failed' && list;
  }, 'the 410 attempt', 10_000, 20);
  assert.equal(d!.attempts[0]!.statusCode, 410);
  const webhook = (await call.GET('/webhooks/{id}', { params: { path: { id: sub.id } } })).data!;
  assert.equal(webhook.active, false);
  assert.match(String(webhook.disabledReason), /410/);
  const listed = (await call.GET('/webhooks')).data;
  assert.deepEqual(listed, [webhook]);
  assert.match(clientError(await retry(call, sub.id, d!.id), 409).message, /disabled/);
  // A disabled subscription gets no new events.
  // No delivery is written with the create (its transaction would hold it), so none can ever be sent.
  assert.equal((await plants.POST('/plants', { body: { id: 2n, name: 'moss' } })).response.status, 200);
  assert.deepEqual((await deliveries(call, sub.id)).map((x) => x.id), [d!.id]);
  assert.equal(r.rx.requests.length, 1);
});

/** A real server whose dispatcher runs only when told, on a clock the test moves. */
async function startWithClock(t: TestContext) {
  // Real time plus an offset the test moves forward: rows the server writes with the wall clock are due.
  const clock = testClock();
  const s = await startApp(t, {
    config: { webhookAllowedHosts: ['127.0.0.1'], webhookTimeoutMs: 2_000 },
    // Only the dispatcher's schedule moves; the API (manual retry: due now) stays on the wall clock.
    dispatcher: { clock, random: () => 0.5 },
    backgroundDispatcher: false,
  });
  const manage = await s.tokens.create({ name: 'hooks', scopes: ['webhooks:manage', 'plants:read'] });
  return { url: s.url, clock, dispatcher: s.dispatcher, call: clientFor(s.url, manage.secret), write: clientFor(s.url, s.token.write) };
}

test('after the whole retry schedule a delivery is failed; a manual retry (202) makes it pending and it is delivered', async (t) => {
  const s = await startWithClock(t);
  const r = await receiver(t, 503);
  const sub = await subscribe(s.call, r);
  assert.equal((await s.write.POST('/plants', { body: { id: 7n, name: 'ivy' } })).response.status, 200);

  assert.equal(await s.dispatcher.runOnce(), 1);
  for (const delay of RETRY_SCHEDULE_MS) {
    // Not due yet: nothing is sent before its time.
    s.clock.advance(delay - 1_000);
    assert.equal(await s.dispatcher.runOnce(), 0);
    s.clock.advance(2_000);
    assert.equal(await s.dispatcher.runOnce(), 1);
  }
  const [failed] = await deliveries(s.call, sub.id);
  assert.equal(failed!.status, 'failed');
  assert.equal('nextAttemptAt' in failed!, false);
  assert.equal(failed!.attempts.length, RETRY_SCHEDULE_MS.length + 1);
  assert.ok(failed!.attempts.every((a) => a.statusCode === 503 && /503/.test(a.error ?? '')));
  // Every attempt of the event carried the same webhook-id.
  assert.equal(r.rx.requests.length, RETRY_SCHEDULE_MS.length + 1);
  assert.deepEqual(new Set(r.rx.requests.map((x) => x.headers['webhook-id'])), new Set([failed!.eventId]));
  s.clock.advance(48 * 3_600_000);
  assert.equal(await s.dispatcher.runOnce(), 0, 'a failed delivery is not tried again by itself');

  // Unknown delivery of a known subscription, and a delivery of another subscription, are 404.
  const other = await subscribe(s.call, r.url.replace('/hooks/plants', '/other'));
  for (const [id, deliveryId] of [[sub.id, 'nope'], [other.id, failed!.id]] as const) {
    clientError(await retry(s.call, id, deliveryId), 404, `${id} ${deliveryId}`);
  }

  r.rx.reply = () => ({ status: 204 });
  const retried = await retry(s.call, sub.id, failed!.id);
  assert.equal(retried.response.status, 202);
  const pending = retried.data!;
  assert.equal(pending.id, failed!.id);
  assert.equal(pending.eventId, failed!.eventId);
  assert.equal(pending.status, 'pending');
  assert.ok(pending.nextAttemptAt && Math.abs(Date.parse(pending.nextAttemptAt) - Date.now()) < 60_000);
  assert.equal(pending.attempts.length, RETRY_SCHEDULE_MS.length + 1, 'the history is kept');
  // Retrying again while it waits is accepted and sends it no more often: it is already due.
  assert.equal((await retry(s.call, sub.id, failed!.id)).response.status, 202);

  assert.equal(await s.dispatcher.runOnce(), 1);
  const [done] = await deliveries(s.call, sub.id);
  assert.equal(done!.status, 'succeeded');
  assert.equal(done!.attempts.length, RETRY_SCHEDULE_MS.length + 2);
  assert.equal(done!.attempts.at(-1)!.statusCode, 204);
  assert.equal(r.rx.requests.at(-1)!.headers['webhook-id'], failed!.eventId);
});

test('deleting a subscription cancels its pending delivery; the deliveries of a deleted subscription are 404', async (t) => {
  const s = await startWithClock(t);
  const r = await receiver(t, 500);
  const sub = await subscribe(s.call, r);
  assert.equal((await s.write.POST('/plants', { body: { id: 1n, name: 'fern' } })).response.status, 200);
  assert.equal(await s.dispatcher.runOnce(), 1);
  assert.equal((await deliveries(s.call, sub.id))[0]!.status, 'pending');
  assert.equal((await s.call.DELETE('/webhooks/{id}', { params: { path: { id: sub.id } } })).response.status, 204);
  s.clock.advance(60_000);
  assert.equal(await s.dispatcher.runOnce(), 0, 'nothing is sent to a deleted subscription');
  clientError(await s.call.GET('/webhooks/{id}/deliveries', { params: { path: { id: sub.id } } }), 404);
  assert.equal(r.rx.requests.length, 1);
});
