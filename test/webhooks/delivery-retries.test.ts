// Delivery to a real receiver on 127.0.0.1, driven with a controllable clock (dispatcher.runOnce at a fake
// now, not real hours): the signed request itself, the retry schedule with its jitter bounds and the final
// 'failed', Retry-After on 429/503, 410 disabling the subscription, timeouts, redirects not followed,
// connection errors, the connect-time SSRF check, idempotent replays and a manual retry.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RETRY_SCHEDULE_MS } from '../../src/webhooks/retry-policy.js';
import { USER_AGENT } from '../../src/webhooks/sender.js';
import { testClock } from '../helpers/clock.js';
import { addSubscription, onlyDelivery, startDeliveryApp, withoutVersion } from '../helpers/webhooks.js';
import { startReceiver, type Reply } from '../helpers/receiver.js';

const plantJson = (id: bigint | number, name = `plant-${id}`, tag?: string) =>
  `{"id":${id},"name":${JSON.stringify(name)}${tag === undefined ? '' : `,"tag":${JSON.stringify(tag)}`}}`;

test('a delivery is a signed POST of the exact NewPlant bytes with the Standard Webhooks headers', async (t) => {
  let secret = '';
  const rx = await startReceiver(t, () => secret);
  const clock = testClock();
  const s = await startDeliveryApp(t, { dispatcher: { clock } });
  secret = (await addSubscription(s.store, rx.url)).secret;
  assert.equal(await s.postJson(plantJson(9223372036854775807n, 'Ficus 🌿 "x"', 'indoor')), 200);
  assert.equal(await s.dispatcher.runOnce(), 1);
  assert.deepEqual(rx.problems, []);
  assert.equal(rx.requests.length, 1);
  const r = rx.requests[0]!;
  assert.equal(r.method, 'POST');
  assert.equal(r.path, '/hooks');
  // Digit for digit, exactly what the receiver verified.
  assert.equal(withoutVersion(r.body), '{"id":9223372036854775807,"name":"Ficus 🌿 \\"x\\"","tag":"indoor"}');
  assert.equal(r.headers['content-type'], 'application/json');
  assert.equal(r.headers['user-agent'], USER_AGENT);
  assert.equal(r.headers['content-length'], String(Buffer.byteLength(r.body)));
  assert.match(String(r.headers['webhook-id']), /^msg_[A-Za-z0-9_-]+$/);
  assert.match(String(r.headers['webhook-signature']), /^v1,[A-Za-z0-9+/]+=*$/);
  // The timestamp is the wall clock of the attempt (receivers check it against theirs).
  assert.ok(Math.abs(Number(r.headers['webhook-timestamp']) - Date.now() / 1000) < 5);
  const subs = await s.store.webhooks.listSubscriptions();
  const d = await onlyDelivery(s.store, subs[0]!.id);
  assert.equal(d.status, 'succeeded');
  assert.equal(d.eventId, r.headers['webhook-id']);
  assert.equal(d.attempts.length, 1);
  assert.equal(d.attempts[0]!.statusCode, 200);
  assert.equal(d.attempts[0]!.error, null);
  assert.equal(await s.dispatcher.runOnce(), 0, 'nothing is sent twice');
});

test('failures follow the schedule (5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h) within jitter, every attempt with the same webhook-id, then failed', async (t) => {
  let secret = '';
  const rx = await startReceiver(t, () => secret, () => ({ status: 500 }));
  const clock = testClock();
  // Alternate the jitter extremes: every delay must stay within +-10% of the schedule.
  let flip = 0;
  const random = () => (flip++ % 2 === 0 ? 0 : 0.999999);
  const s = await startDeliveryApp(t, { dispatcher: { clock, random } });
  const sub = await addSubscription(s.store, rx.url);
  secret = sub.secret;
  assert.equal(await s.postJson(plantJson(1)), 200);

  const gaps: number[] = [];
  for (let attempt = 1; attempt <= 8; attempt++) {
    assert.equal(await s.dispatcher.runOnce(), 1, `attempt ${attempt}`);
    const d = await onlyDelivery(s.store, sub.id);
    assert.equal(d.attempts.length, attempt);
    const last = d.attempts.at(-1)!;
    assert.equal(last.statusCode, 500);
    assert.equal(last.error, 'HTTP 500');
    if (attempt === 8) {
      assert.equal(d.status, 'failed');
      assert.equal(d.nextAttemptAt, null);
      break;
    }
    assert.equal(d.status, 'pending');
    const gap = d.nextAttemptAt!.getTime() - last.at.getTime();
    gaps.push(gap);
    const base = RETRY_SCHEDULE_MS[attempt - 1]!;
    // The gap is measured from the attempt's start; the send itself takes a few ms.
    assert.ok(gap >= base * 0.9 && gap <= base * 1.1 + 2_000, `retry ${attempt}: ${gap} ms vs ${base} ms`);
    // Not due a moment before its time...
    clock.advanceTo(new Date(d.nextAttemptAt!.getTime() - 1_000));
    assert.equal(await s.dispatcher.runOnce(), 0, `retry ${attempt} ran early`);
    // ...and due at it.
    clock.advanceTo(d.nextAttemptAt!);
  }
  t.diagnostic(`gaps (ms): ${gaps.join(', ')}`);
  // Both jitter extremes were used: the low ones at ~0.9x, the high ones at ~1.1x.
  assert.ok(gaps[0]! < RETRY_SCHEDULE_MS[0]! * 0.95 + 2_000 && gaps[1]! > RETRY_SCHEDULE_MS[1]! * 1.09);
  clock.advance(100 * 3600_000);
  assert.equal(await s.dispatcher.runOnce(), 0, 'a failed delivery is not retried by itself');
  assert.equal(rx.requests.length, 8);
  assert.equal(new Set(rx.requests.map((r) => r.headers['webhook-id'])).size, 1, 'one event id across all attempts');
  assert.equal(rx.byId.size, 1);
  assert.deepEqual(rx.problems, []);

  // A manual retry gives it a new round, due now, same event id.
  assert.equal(await s.store.webhooks.retryDelivery(sub.id, (await onlyDelivery(s.store, sub.id)).id, new Date(clock.now())), true);
  rx.reply = () => ({ status: 204 });
  assert.equal(await s.dispatcher.runOnce(), 1);
  const d = await onlyDelivery(s.store, sub.id);
  assert.equal(d.status, 'succeeded');
  assert.equal(d.attempts.length, 9);
  assert.equal(new Set(rx.requests.map((r) => r.headers['webhook-id'])).size, 1);
});

test('429 and 503 with Retry-After wait at least that long; the delivery then succeeds', async (t) => {
  let secret = '';
  const clock = testClock();
  const replies: Reply[] = [];
  const rx = await startReceiver(t, () => secret, (_r, n) => replies[n] ?? { status: 200 });
  const s = await startDeliveryApp(t, { dispatcher: { clock, random: () => 0.5 } });
  const sub = await addSubscription(s.store, rx.url);
  secret = sub.secret;
  assert.equal(await s.postJson(plantJson(7)), 200);

  replies.push({ status: 429, headers: { 'retry-after': '600' } });
  await s.dispatcher.runOnce();
  let d = await onlyDelivery(s.store, sub.id);
  let gap = d.nextAttemptAt!.getTime() - d.attempts[0]!.at.getTime();
  assert.ok(gap >= 600_000 && gap < 602_000, `429 Retry-After 600 -> ${gap} ms (the schedule says 5 s)`);
  clock.advanceTo(new Date(d.nextAttemptAt!.getTime() - 5_000));
  assert.equal(await s.dispatcher.runOnce(), 0, 'sent before Retry-After elapsed');
  clock.advanceTo(d.nextAttemptAt!);

  // An HTTP-date, two hours ahead of the (fake) now.
  const retryAt = new Date(clock.now() + 2 * 3600_000).toUTCString();
  replies.push({ status: 503, headers: { 'retry-after': retryAt } });
  assert.equal(await s.dispatcher.runOnce(), 1);
  d = await onlyDelivery(s.store, sub.id);
  // The next try is at the date the receiver named (whole seconds, so up to 1 s before now + 2 h, and the time
  // the attempt took before it too), not at the schedule's 5 min.
  gap = d.nextAttemptAt!.getTime() - d.attempts[1]!.at.getTime();
  assert.equal(d.nextAttemptAt!.getTime(), Date.parse(retryAt), `503 Retry-After date -> ${gap} ms (the schedule says 5 min)`);
  assert.ok(gap > 2 * 3600_000 - 60_000, `503 Retry-After date -> ${gap} ms (the schedule says 5 min)`);
  assert.equal(d.attempts[1]!.statusCode, 503);

  // A Retry-After of a month is capped at 24 h.
  clock.advanceTo(d.nextAttemptAt!);
  replies.push({ status: 503, headers: { 'retry-after': String(30 * 86_400) } });
  assert.equal(await s.dispatcher.runOnce(), 1);
  d = await onlyDelivery(s.store, sub.id);
  gap = d.nextAttemptAt!.getTime() - d.attempts[2]!.at.getTime();
  assert.ok(gap >= 24 * 3600_000 && gap < 24 * 3600_000 + 2_000, `capped -> ${gap} ms`);

  clock.advanceTo(d.nextAttemptAt!);
  assert.equal(await s.dispatcher.runOnce(), 1);
  d = await onlyDelivery(s.store, sub.id);
  assert.equal(d.status, 'succeeded');
  assert.deepEqual(d.attempts.map((a) => a.statusCode), [429, 503, 503, 200]);
  assert.deepEqual(rx.problems, []);
});

test('410 Gone disables the subscription, cancels its other deliveries, and new plants are not sent to it', async (t) => {
  let goneSecret = '';
  let okSecret = '';
  const gone = await startReceiver(t, () => goneSecret, () => ({ status: 410 }));
  const fine = await startReceiver(t, () => okSecret);
  const clock = testClock();
  // One at a time per subscription, so the 410 lands before the next delivery to it is claimed.
  const s = await startDeliveryApp(t, { dispatcher: { clock, perSubscription: 1 } });
  const g = await addSubscription(s.store, gone.url, 'wh_gone');
  const f = await addSubscription(s.store, fine.url, 'wh_fine');
  goneSecret = g.secret;
  okSecret = f.secret;
  for (const id of [1, 2, 3]) assert.equal(await s.postJson(plantJson(id)), 200);

  await s.dispatcher.runOnce();
  assert.equal(gone.requests.length, 1, 'nothing more is sent after the 410');
  assert.equal(fine.byId.size, 3);
  const sub = (await s.store.webhooks.getSubscription(g.id))!;
  assert.ok(sub.disabledAt instanceof Date);
  assert.match(sub.disabledReason ?? '', /410/);
  const list = await s.store.webhooks.listDeliveries(g.id, 10);
  assert.deepEqual(list.map((d) => d.status).sort(), ['cancelled', 'cancelled', 'failed']);
  assert.equal(list.find((d) => d.status === 'failed')!.attempts[0]!.statusCode, 410);

  assert.equal(await s.postJson(plantJson(4)), 200);
  clock.advance(48 * 3600_000);
  await s.dispatcher.runOnce();
  assert.equal(gone.requests.length, 1);
  assert.equal(fine.byId.size, 4);
  assert.equal((await s.store.webhooks.listDeliveries(g.id, 10)).length, 3);
  assert.deepEqual([...gone.problems, ...fine.problems], []);
});

test('a receiver that does not answer in time is a failed attempt (timeout), retried later', async (t) => {
  let secret = '';
  const rx = await startReceiver(t, () => secret, () => 'hang');
  const clock = testClock();
  const s = await startDeliveryApp(t, { dispatcher: { clock, timeoutMs: 300 } });
  const sub = await addSubscription(s.store, rx.url);
  secret = sub.secret;
  assert.equal(await s.postJson(plantJson(5)), 200);
  const t0 = Date.now();
  assert.equal(await s.dispatcher.runOnce(), 1);
  const elapsed = Date.now() - t0;
  assert.ok(elapsed >= 290 && elapsed < 3_000, `runOnce took ${elapsed} ms`);
  const d = await onlyDelivery(s.store, sub.id);
  assert.equal(d.status, 'pending');
  const a = d.attempts[0]!;
  assert.equal(a.statusCode, null);
  assert.match(a.error ?? '', /timeout/);
  assert.ok(a.durationMs >= 290 && a.durationMs < 3_000, String(a.durationMs));
  assert.equal(rx.requests.length, 1, 'the request did arrive');
});

test('a redirect is not followed: 3xx is a failed attempt and the Location is never requested', async (t) => {
  let secret = '';
  const rx = await startReceiver(t, () => secret, (r) =>
    r.path === '/hooks' ? { status: 302, headers: { location: '/elsewhere' } } : { status: 200 },
  );
  const clock = testClock();
  const s = await startDeliveryApp(t, { dispatcher: { clock } });
  const sub = await addSubscription(s.store, rx.url);
  secret = sub.secret;
  assert.equal(await s.postJson(plantJson(6)), 200);
  await s.dispatcher.runOnce();
  assert.deepEqual(rx.requests.map((r) => r.path), ['/hooks']);
  const d = await onlyDelivery(s.store, sub.id);
  assert.equal(d.status, 'pending');
  assert.equal(d.attempts[0]!.statusCode, 302);
  assert.match(d.attempts[0]!.error ?? '', /redirect/);
});

test('connection refused and internal addresses refused at connect time are failed attempts; nothing reaches them', async (t) => {
  let secret = '';
  const rx = await startReceiver(t, () => secret);
  const clock = testClock();
  // Not allowlisted here: 127.0.0.1 and localhost must be refused by the sender itself, even though the
  // subscription rows exist (written around the API's own check).
  const s = await startDeliveryApp(t, { dispatcher: { clock, allowedHosts: [] } });
  const closed = await startReceiver(t, 'whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA');
  const closedUrl = closed.url;
  await closed.close();
  const byLiteral = await addSubscription(s.store, rx.url, 'wh_literal');
  const byName = await addSubscription(s.store, `http://localhost:${rx.port}/hooks`, 'wh_name');
  secret = byLiteral.secret;
  assert.equal(await s.postJson(plantJson(8)), 200);
  await s.dispatcher.runOnce();
  assert.equal(rx.requests.length, 0);
  const literal = (await onlyDelivery(s.store, byLiteral.id)).attempts[0]!;
  assert.equal(literal.statusCode, null);
  assert.match(literal.error ?? '', /refusing to connect: 127\.0\.0\.1 is a loopback address/);
  const name = (await onlyDelivery(s.store, byName.id)).attempts[0]!;
  assert.match(name.error ?? '', /refusing to connect: localhost resolves to .*loopback/);

  // With the address allowlisted (as the tests' WEBHOOK_ALLOWED_HOSTS does), a closed port is a connection error.
  const s2 = await startDeliveryApp(t, { dispatcher: { clock } });
  const dead = await addSubscription(s2.store, closedUrl);
  assert.equal(await s2.postJson(plantJson(9)), 200);
  await s2.dispatcher.runOnce();
  const d = await onlyDelivery(s2.store, dead.id);
  assert.equal(d.status, 'pending');
  assert.match(d.attempts[0]!.error ?? '', /connection error: ECONNREFUSED/);
});

test('an idempotent replay of POST /plants emits no second event; a conflict emits none either', async (t) => {
  let secret = '';
  const rx = await startReceiver(t, () => secret);
  const clock = testClock();
  const s = await startDeliveryApp(t, { dispatcher: { clock } });
  const sub = await addSubscription(s.store, rx.url);
  secret = sub.secret;
  const body = plantJson(42, 'Monstera', 'big');
  const statuses = await Promise.all([s.postJson(body), s.postJson(body), s.postJson(body)]);
  assert.deepEqual(statuses, [200, 200, 200]);
  assert.equal(await s.postJson(body), 200);
  assert.equal(await s.postJson(plantJson(42, 'Other')), 409);
  await s.dispatcher.runOnce();
  assert.equal((await s.store.webhooks.listDeliveries(sub.id, 10)).length, 1);
  clock.advance(48 * 3600_000);
  await s.dispatcher.runOnce();
  assert.equal(rx.requests.length, 1);
  assert.equal(withoutVersion(rx.requests[0]!.body), body);
  assert.deepEqual(rx.problems, []);
});
