// Delivery under load with the dispatcher running in the background (real clock): 1000 plants created
// concurrently reach the receiver as exactly 1000 distinct, validly signed events; a slow receiver does not
// delay a fast one; and delivery does not slow POST /plants.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { answered, postRaw } from '../helpers/raw-request.js';
import { addSubscription, deliveriesOf, startDeliveryApp, withoutVersion } from '../helpers/webhooks.js';
import { startReceiver } from '../helpers/receiver.js';
import { eventually } from '../helpers/sleep.js';

const PLANTS = 1_000;
// Ids above 2^53: exactness is part of what must arrive.
const FIRST = 2n ** 60n;

test('1000 plants created concurrently yield exactly 1000 distinct events at the receiver, each signature valid', async (t) => {
  let secret = '';
  const rx = await startReceiver(t, () => secret);
  const s = await startDeliveryApp(t, { background: true });
  const sub = await addSubscription(s.store, rx.url);
  secret = sub.secret;

  const t0 = Date.now();
  const agent = new http.Agent({ keepAlive: true, maxSockets: 100 });
  t.after(() => agent.destroy());
  const bodies = new Map<string, bigint>();
  const statuses = await Promise.all(
    Array.from({ length: PLANTS }, (_, i) => {
      const id = FIRST + BigInt(i);
      const json = `{"id":${id},"name":"plant-${id}"}`;
      bodies.set(json, id);
      return postRaw(s.port, s.token.write, json, { agent }).then((r) => answered(r).status);
    }),
  );
  const created = Date.now() - t0;
  assert.deepEqual([...new Set(statuses)], [200]);

  await rx.until((r) => r.byId.size >= PLANTS, 60_000);
  const delivered = Date.now() - t0;
  // Counted once every delivery is recorded and the dispatcher has stopped, its sends all ended: a stray
  // duplicate has arrived by then, and none can start after.
  await eventually(async () => (await deliveriesOf(s.store, sub.id)).every((d) => d.status !== 'pending'), 'every delivery recorded', 10_000);
  await s.dispatcher.stop();
  t.diagnostic(`${PLANTS} POSTs answered in ${created} ms; all events delivered ${delivered} ms after the first POST; requests at the receiver: ${rx.requests.length}`);

  assert.deepEqual(rx.problems, [], 'every signature verifies with standardwebhooks; no id carried two bodies');
  assert.equal(rx.byId.size, PLANTS, 'exactly 1000 distinct webhook-ids');
  const seen = new Set<bigint>();
  for (const r of rx.byId.values()) {
    const id = bodies.get(withoutVersion(r.body));
    assert.ok(id !== undefined, `an event no plant matches: ${r.body}`);
    seen.add(id);
  }
  assert.equal(seen.size, PLANTS, 'one event per plant, each carrying that plant exactly');
  const list = await deliveriesOf(s.store, sub.id);
  assert.equal(list.length, PLANTS);
  assert.deepEqual([...new Set(list.map((d) => d.status))], ['succeeded']);
  assert.equal(new Set(list.map((d) => d.eventId)).size, PLANTS);
});

test('a slow receiver does not delay a fast one, and delivery does not slow POST /plants', async (t) => {
  let slowSecret = '';
  let fastSecret = '';
  // The slow receiver never answers (until the test ends): the worst case, a receiver that holds connections.
  const slow = await startReceiver(t, () => slowSecret, () => 'hang');
  const fast = await startReceiver(t, () => fastSecret);
  const s = await startDeliveryApp(t, { background: true, config: { webhookTimeoutMs: 30_000 } });
  slowSecret = (await addSubscription(s.store, slow.url, 'wh_slow')).secret;
  fastSecret = (await addSubscription(s.store, fast.url, 'wh_fast')).secret;

  const n = 40;
  const t0 = Date.now();
  const latencies: number[] = [];
  for (let i = 0; i < n; i++) {
    const start = Date.now();
    assert.equal(await s.postJson(`{"id":${i + 1},"name":"p${i + 1}"}`), 200);
    latencies.push(Date.now() - start);
  }
  await fast.until((r) => r.byId.size >= n, 10_000);
  const fastDone = Date.now() - t0;
  const slowList = await deliveriesOf(s.store, 'wh_slow');
  t.diagnostic(
    `fast receiver had all ${n} events ${fastDone} ms after the first POST, while the slow one held ${slow.requests.length} ` +
      `unanswered (${slowList.filter((d) => d.attempts.length === 0).length} of its deliveries not yet attempted or answered); ` +
      `POST /plants latency max ${Math.max(...latencies)} ms, median ${latencies.sort((a, b) => a - b)[n >> 1]} ms`,
  );
  // Every slow delivery is still unanswered: the fast one did not wait for any of them.
  assert.ok(slowList.every((d) => d.status === 'pending' && d.attempts.length === 0));
  assert.ok(slow.requests.length <= 4, `more than the per-subscription cap in flight to the slow receiver: ${slow.requests.length}`);
  assert.ok(slow.requests.length >= 1, 'the slow receiver was being tried');
  // A POST that waited for a delivery would take the 30 s timeout.
  assert.ok(Math.max(...latencies) < 5_000, `POST /plants took ${Math.max(...latencies)} ms`);
  assert.deepEqual([...fast.problems, ...slow.problems], []);
});
