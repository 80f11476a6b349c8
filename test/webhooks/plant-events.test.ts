// Every change of a plant is an event: newPlant, plantUpdated and plantDeleted, written with the change (outbox),
// signed per Standard Webhooks (the receiver verifies with the standardwebhooks library), each body carrying the
// plant's version (a delete's above the last update's); a subscription gets only the events it chose; POST
// /webhooks validates the choice and refuses duplicates and subscriptions beyond WEBHOOK_MAX_SUBSCRIPTIONS. Real
// HTTP and a real receiver on the engine under test.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { errorOf } from '../helpers/app.js';
import { postSubscription, startDeliveryApp, type DeliveryApp } from '../helpers/webhooks.js';
import { startReceiver, type Received } from '../helpers/receiver.js';

function send(s: DeliveryApp, method: string, id: string, body?: string, headers: Record<string, string> = {}) {
  return fetch(`${s.url}/plants/${id}`, {
    method,
    headers: {
      authorization: `Bearer ${s.token.write}`,
      ...(body !== undefined && { 'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json' }),
      ...headers,
    },
    ...(body !== undefined && { body }),
  });
}

/** An event body with its int64 members (`id`, `version`) read as their digits. */
function bodyOf(r: Received): Record<string, string> {
  return JSON.parse(r.body.replace(/"(id|version)":(-?\d+)/g, '"$1":"$2"')) as Record<string, string>;
}

test('a plant created, renamed, patched and deleted: four signed events whose versions grow and match the ETags', async (t) => {
  const s = await startDeliveryApp(t);
  let secret = '';
  const rx = await startReceiver(t, () => secret);
  const res = await postSubscription(s, { url: rx.url });
  assert.equal(res.status, 201);
  const sub = (await res.json()) as { id: string; secret: string; events: string[] };
  secret = sub.secret;
  assert.deepEqual(sub.events, ['newPlant', 'plantUpdated', 'plantDeleted'], 'all three by default');

  const id = '9223372036854775807';
  assert.equal(await s.postJson(`{"id": ${id}, "name": "fern", "tag": "green"}`), 200);
  const put = await send(s, 'PUT', id, '{"name": "moss", "tag": "green"}');
  assert.equal(put.status, 200);
  const patch = await send(s, 'PATCH', id, '{"tag": null}');
  assert.equal(patch.status, 200);
  // A write that changes nothing is no event.
  assert.equal((await send(s, 'PUT', id, '{"name": "moss"}')).status, 200);
  const etag = patch.headers.get('etag')!;
  assert.equal((await send(s, 'DELETE', id)).status, 204);

  await s.dispatcher.runOnce();
  await rx.until((r) => r.byId.size >= 4);
  assert.deepEqual(rx.problems, [], 'every event verifies with standardwebhooks');
  // In version order (delivery order is not promised); the delete takes a version of its own, above the last update's.
  const bodies = [...rx.byId.values()].map(bodyOf).sort((a, b) => (BigInt(a.version!) < BigInt(b.version!) ? -1 : 1));
  assert.equal(bodies.length, 4);
  const created = bodies[0]!.version!;
  const deletedAt = bodies[3]!.version!;
  assert.deepEqual(bodies, [
    { id, name: 'fern', tag: 'green', version: created },
    { id, name: 'moss', tag: 'green', version: put.headers.get('etag')!.replaceAll('"', '') },
    { id, name: 'moss', version: etag.replaceAll('"', '') },
    { id, version: deletedAt },
  ]);
  assert.ok(BigInt(created) < BigInt(bodies[1]!.version!) && BigInt(bodies[1]!.version!) < BigInt(bodies[2]!.version!));
  assert.ok(BigInt(deletedAt) > BigInt(bodies[2]!.version!), `the delete's version ${deletedAt} is above the last update's ${bodies[2]!.version}`);
  // The feed shows the delete with the version its delivery carries.
  const feed = await fetch(`${s.url}/events`, { headers: { authorization: `Bearer ${s.token.read}` } });
  const text = (await feed.text()).replace(/"(id|version)":(-?\d+)/g, '"$1":"$2"');
  const events = JSON.parse(text) as { type: string; data: Record<string, string> }[];
  assert.deepEqual(events.map((e) => e.type), ['newPlant', 'plantUpdated', 'plantUpdated', 'plantDeleted']);
  assert.deepEqual(events[3]!.data, { id, version: deletedAt });
  // The event types, from the deliveries the API lists.
  const manage = await s.tokens.create({ name: 'read hooks', scopes: ['webhooks:manage'] });
  const deliveries = (await (await fetch(`${s.url}/webhooks/${sub.id}/deliveries`, { headers: { authorization: `Bearer ${manage.secret}` } })).json()) as { eventId: string }[];
  assert.equal(deliveries.length, 4);
});

test('a subscription receives only the event types it chose; an event nobody chose is in the feed and delivered to nobody', async (t) => {
  const s = await startDeliveryApp(t);
  const secrets: Record<string, string> = {};
  const created = await startReceiver(t, () => secrets.created!);
  const deleted = await startReceiver(t, () => secrets.deleted!);
  for (const [name, rx, events] of [['created', created, ['newPlant']], ['deleted', deleted, ['plantDeleted']]] as const) {
    const res = await postSubscription(s, { url: rx.url, events });
    assert.equal(res.status, 201);
    const body = (await res.json()) as { secret: string; events: string[] };
    assert.deepEqual(body.events, events);
    secrets[name] = body.secret;
  }
  assert.equal(await s.postJson('{"id": 1, "name": "fern"}'), 200);
  assert.equal((await send(s, 'PUT', '1', '{"name": "moss"}')).status, 200);
  assert.equal((await send(s, 'DELETE', '1')).status, 204);
  await s.dispatcher.runOnce();
  await created.until((r) => r.byId.size >= 1);
  await deleted.until((r) => r.byId.size >= 1);
  await s.dispatcher.runOnce();
  assert.deepEqual([...created.byId.values()].map((r) => JSON.parse(r.body).name), ['fern']);
  assert.deepEqual([...deleted.byId.values()].map((r) => Object.keys(JSON.parse(r.body)).sort()), [['id', 'version']]);
  assert.deepEqual([...created.problems, ...deleted.problems], []);
  // Nobody chose plantUpdated: its event has no delivery, so each subscription has exactly one; the feed has all three.
  assert.equal(await s.store.webhooks.countPendingDeliveries(), 0);
  for (const sub of await s.store.webhooks.listSubscriptions()) {
    assert.equal((await s.store.webhooks.listDeliveries(sub.id, 10)).length, 1, sub.url);
  }
  assert.deepEqual((await s.store.events.readAfter(null, 10)).map((e) => e.type), ['newPlant', 'plantUpdated', 'plantDeleted']);
});

test('POST /webhooks: unknown or repeated event types are 400; the same URL and events again is 409; the limit is 409', async (t) => {
  const s = await startDeliveryApp(t, { config: { webhookMaxSubscriptions: 3 } });
  const url = 'http://127.0.0.1:9/hooks';
  for (const [events, pattern] of [
    [['plantRenamed'], /plantRenamed|allowed values|must be equal/],
    [[], /events/],
    [['newPlant', 'newPlant'], /events/],
    ['newPlant', /events/],
  ] as const) {
    const res = await postSubscription(s, { url, events });
    assert.equal(res.status, 400, JSON.stringify(events));
    assert.match((await errorOf(res)).message, pattern);
  }
  assert.equal((await postSubscription(s, { url, events: ['plantDeleted', 'newPlant'] })).status, 201);
  // The same set in another order is the same subscription.
  const again = await postSubscription(s, { url, events: ['newPlant', 'plantDeleted'] });
  assert.equal(again.status, 409);
  assert.match((await errorOf(again)).message, /already delivers these events/);
  // Another set for the same URL is another subscription.
  assert.equal((await postSubscription(s, { url })).status, 201);
  assert.equal((await postSubscription(s, { url: 'http://127.0.0.1:9/other' })).status, 201);
  const beyond = await postSubscription(s, { url: 'http://127.0.0.1:9/fourth' });
  assert.equal(beyond.status, 409);
  assert.match((await errorOf(beyond)).message, /WEBHOOK_MAX_SUBSCRIPTIONS/);
  assert.equal((await s.store.webhooks.listSubscriptions()).length, 3);
});

test('concurrent identical subscriptions: exactly one is created, the others are 409', async (t) => {
  const s = await startDeliveryApp(t);
  const answers = await Promise.all(Array.from({ length: 8 }, () => postSubscription(s, { url: 'http://127.0.0.1:9/same' })));
  const statuses = answers.map((r) => r.status).sort();
  assert.deepEqual(statuses, [201, 409, 409, 409, 409, 409, 409, 409]);
  assert.equal((await s.store.webhooks.listSubscriptions()).length, 1);
});
