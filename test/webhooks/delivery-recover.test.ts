// POST /webhooks/{id}/recover through a real server and real receivers on 127.0.0.1 that verify every
// request with `standardwebhooks`: deliveries that failed for good while a receiver answered 500 (the
// schedule run on a controllable clock, not real hours) are queued again once it is back, and each event
// reaches it once more with its webhook-id; a `since` after them queues none; another subscription's
// deliveries stay as they are; deliveries cancelled by a 410 come back once the subscription is enabled; a
// disabled subscription, a bad `since` and an unknown id are refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { PlantStoreClient } from '@plant-store/client';
import { clientError, clientFor } from '../helpers/client.js';
import { testClock } from '../helpers/clock.js';
import { addSubscription, deliveriesOf, startDeliveryApp, type DeliveryApp } from '../helpers/webhooks.js';
import { startReceiver } from '../helpers/receiver.js';

const HOURS_12 = 12 * 3600_000;

function recover(hooks: PlantStoreClient, id: string, since: string) {
  return hooks.POST('/webhooks/{id}/recover', { params: { path: { id } }, body: { since } });
}

/** Runs the dispatcher, moving the clock past the longest retry gap each time, until `done` holds. */
async function dispatchUntil(s: DeliveryApp, clock: ReturnType<typeof testClock>, done: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 40; i++) {
    if (await done()) return;
    await s.dispatcher.runOnce();
    clock.advance(HOURS_12);
  }
  throw new Error('the dispatcher did not get there in 40 runs');
}

test('recover queues the failed deliveries made since a time, and the receiver gets each of those events once more with its webhook-id', async (t) => {
  const clock = testClock();
  // One delivery per subscription per run, so a 410 lands before the next delivery to it is claimed.
  const s = await startDeliveryApp(t, { dispatcher: { clock, perSubscription: 1 } });
  const hooks = clientFor(s, (await s.tokens.create({ name: 'hooks', scopes: ['webhooks:manage'] })).secret);
  let secretA = '';
  let secretB = '';
  const a = await startReceiver(t, () => secretA, () => ({ status: 500 }));
  const b = await startReceiver(t, () => secretB, () => ({ status: 500 }));
  const subA = await addSubscription(s.store, a.url, 'wh_a');
  const subB = await addSubscription(s.store, b.url, 'wh_b');
  secretA = subA.secret;
  secretB = subB.secret;

  const before = new Date(Date.now() - 1_000).toISOString();
  assert.equal(await s.postJson('{"id":1,"name":"fern"}'), 200);
  assert.equal(await s.postJson('{"id":2,"name":"moss"}'), 200);
  const allFailed = async () =>
    [...(await deliveriesOf(s.store, subA.id)), ...(await deliveriesOf(s.store, subB.id))].filter((d) => d.status === 'failed').length === 4;
  await dispatchUntil(s, clock, allFailed);
  assert.equal(a.requests.length, 16, 'two events, eight attempts each');
  const failedIds = new Set(a.requests.map((r) => String(r.headers['webhook-id'])));
  assert.equal(failedIds.size, 2);

  // The receiver is back. A since after the deliveries queues none.
  a.reply = () => ({ status: 200 });
  const after = await recover(hooks, subA.id, new Date().toISOString());
  assert.equal(after.response.status, 202);
  assert.deepEqual(after.data, { queued: 0, more: false });
  assert.equal(await s.dispatcher.runOnce(), 0);

  const since = await recover(hooks, subA.id, before);
  assert.equal(since.response.status, 202);
  assert.deepEqual(since.data, { queued: 2, more: false });
  await s.dispatcher.runOnce();
  await s.dispatcher.runOnce();
  const again = a.requests.slice(16);
  assert.equal(again.length, 2, 'each event once more');
  assert.deepEqual(new Set(again.map((r) => String(r.headers['webhook-id']))), failedIds);
  // The same body as before (the receiver compares every repeat), verified with the subscription's secret.
  assert.deepEqual(a.problems, []);
  for (const d of await deliveriesOf(s.store, subA.id)) {
    assert.equal(d.status, 'succeeded');
    assert.equal(d.attempts.length, 9);
    assert.equal(d.attempts.at(-1)!.statusCode, 200);
  }
  // The other subscription's deliveries were not touched.
  assert.equal(b.requests.length, 16);
  assert.deepEqual((await deliveriesOf(s.store, subB.id)).map((d) => [d.status, d.attempts.length]), [['failed', 8], ['failed', 8]]);
  // Nothing left to recover for A: they succeeded.
  assert.deepEqual((await recover(hooks, subA.id, before)).data, { queued: 0, more: false });

  // B's receiver answers 410 to the first of its recovered deliveries: B is disabled, the other one cancelled.
  assert.deepEqual((await recover(hooks, subB.id, before)).data, { queued: 2, more: false });
  b.reply = () => ({ status: 410 });
  await s.dispatcher.runOnce();
  assert.deepEqual((await deliveriesOf(s.store, subB.id)).map((d) => d.status).sort(), ['cancelled', 'failed']);
  const disabled = clientError(await recover(hooks, subB.id, before), 409, 'disabled');
  assert.match(disabled.message, /^Webhook subscription wh_b is disabled \(the receiver answered 410 Gone on .*\), so nothing was queued\. Re-enable it first with `npx plant-store webhook enable wh_b`, then recover\.$/);
  // Enabled again, both come back: the failed one and the one cancelled when it was disabled.
  assert.equal(await s.store.webhooks.enableSubscription(subB.id), true);
  b.reply = () => ({ status: 204 });
  assert.deepEqual((await recover(hooks, subB.id, before)).data, { queued: 2, more: false });
  await dispatchUntil(s, clock, async () => (await deliveriesOf(s.store, subB.id)).every((d) => d.status === 'succeeded'));
  assert.equal(b.requests.length, 19, '16 failures, the 410, then both events once');
  assert.deepEqual(new Set(b.requests.slice(17).map((r) => String(r.headers['webhook-id']))), new Set(b.requests.slice(0, 16).map((r) => String(r.headers['webhook-id']))));
  assert.deepEqual(b.problems, []);
});

test('recovered deliveries go out oldest first, at most 4 of a subscription at a time: the receiver holding its answers sees the 4 oldest events, then the rest', async (t) => {
  const clock = testClock();
  const s = await startDeliveryApp(t, { dispatcher: { clock } });
  const hooks = clientFor(s, (await s.tokens.create({ name: 'hooks', scopes: ['webhooks:manage'] })).secret);
  let secret = '';
  const rx = await startReceiver(t, () => secret, () => ({ status: 500 }));
  const sub = await addSubscription(s.store, rx.url, 'wh_order');
  secret = sub.secret;
  const before = new Date(Date.now() - 1_000).toISOString();
  // One after another (the event order is the plants' order), all before the first pass: their deliveries are
  // made in one pass, at one time.
  for (const id of [6, 2, 5, 1, 4, 3]) assert.equal(await s.postJson(`{"id":${id},"name":"p${id}"}`), 200);
  await dispatchUntil(s, clock, async () => (await deliveriesOf(s.store, sub.id)).filter((d) => d.status === 'failed').length === 6);
  const oldestFirst = [6, 2, 5, 1, 4, 3];
  const failed = rx.requests.length;

  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  rx.reply = async () => {
    await gate;
    return { status: 204 };
  };
  assert.deepEqual((await recover(hooks, sub.id, before)).data, { queued: 6, more: false });
  const sending = s.dispatcher.runOnce();
  const plantsOf = (from: number, to?: number) => new Set(rx.requests.slice(from, to).map((r) => (JSON.parse(r.body) as { id: number }).id));
  await rx.until((r) => r.requests.length === failed + 4);
  assert.deepEqual(plantsOf(failed), new Set(oldestFirst.slice(0, 4)), 'the first four held are the four oldest');
  open();
  await sending;
  assert.equal(rx.requests.length, failed + 6);
  assert.deepEqual(plantsOf(failed + 4), new Set(oldestFirst.slice(4)));
  assert.deepEqual(rx.problems, []);
  assert.ok((await deliveriesOf(s.store, sub.id)).every((d) => d.status === 'succeeded'));
});

test('recover refuses a since that is not an RFC 3339 date-time or is in the future (400), and an unknown subscription (404)', async (t) => {
  const s = await startDeliveryApp(t);
  const hooks = clientFor(s, (await s.tokens.create({ name: 'hooks', scopes: ['webhooks:manage'] })).secret);
  const sub = await addSubscription(s.store, 'http://127.0.0.1:9/hooks', 'wh_here');
  for (const since of ['yesterday', '', '2026-03-14', '2026-03-14T08:00:00', '2026-02-30T08:00:00Z', '2026-03-14T24:00:00Z', '2026-03-14T08:00:00+25:00']) {
    const e = clientError(await recover(hooks, sub.id, since), 400, JSON.stringify(since));
    assert.match(e.message, /since/, since);
  }
  const future = new Date(Date.now() + 3600_000).toISOString();
  assert.match(clientError(await recover(hooks, sub.id, future), 400, 'future').message, /^`since` \(.*\) is in the future/);
  // No body, or a body without since.
  clientError(await hooks.POST('/webhooks/{id}/recover', { params: { path: { id: sub.id } }, body: {} as { since: string } }), 400, 'no since');
  // Offsets and fractions are read as the instant they name; a leap second is accepted.
  for (const since of ['2026-01-01T09:00:00+09:00', '2025-12-31t23:59:60.5z', '1999-12-31T23:59:59.123456-05:30', '0000-01-01T00:00:00Z']) {
    assert.deepEqual((await recover(hooks, sub.id, since)).data, { queued: 0, more: false }, since);
  }
  assert.equal(clientError(await recover(hooks, 'wh_nope', '2026-01-01T00:00:00Z'), 404, 'unknown').message, 'No webhook subscription with id wh_nope.');
  // The scope is webhooks:manage.
  clientError(await recover(clientFor(s, s.token.all), sub.id, '2026-01-01T00:00:00Z'), 403, 'plants token');
});
