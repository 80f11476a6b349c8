// Every delivery names its event: the CloudEvents binary-mode headers (ce-type, ce-id = webhook-id, ce-subject
// the exact plant id, ce-time, ce-source, ce-specversion) on every delivery, and, for a subscription whose
// format is envelope, the Standard Webhooks envelope {type, timestamp, data} as the signed body. Receivers on
// 127.0.0.1 verify every delivery with the standardwebhooks library and tell the three events apart.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { errorOf, migratedDatabaseUrl, runCli } from '../helpers/app.js';
import { postSubscription, startDeliveryApp, type DeliveryApp } from '../helpers/webhooks.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';

/** Above 2^53: a JSON.parse or a Number anywhere on the way would change its digits. */
const ID = '9007199254740993';
const CE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** Creates, renames and deletes plant ID: one event of each type. */
async function threeEvents(s: DeliveryApp): Promise<void> {
  assert.equal(await s.postJson(`{"id": ${ID}, "name": "fern"}`), 200);
  const auth = { authorization: `Bearer ${s.token.write}` };
  assert.equal((await fetch(`${s.url}/plants/${ID}`, { method: 'PUT', headers: { ...auth, 'content-type': 'application/json' }, body: '{"name": "moss"}' })).status, 200);
  assert.equal((await fetch(`${s.url}/plants/${ID}`, { method: 'DELETE', headers: auth })).status, 204);
}

/** The verified deliveries by the type their ce-type header names, after checking every ce-* header. */
async function byCeType(s: DeliveryApp, rx: Receiver): Promise<Map<string, { body: string; time: string }>> {
  await rx.until((r) => r.byId.size >= 3);
  assert.deepEqual(rx.problems, [], 'every delivery verifies with standardwebhooks');
  const feed = new Map((await s.store.events.readAfter(null, 10)).map((e) => [e.id, e]));
  const out = new Map<string, { body: string; time: string }>();
  for (const [id, r] of rx.byId) {
    const h = r.headers;
    assert.equal(h['ce-specversion'], '1.0');
    assert.equal(h['ce-id'], id, 'ce-id is the webhook-id');
    assert.equal(h['ce-source'], '/plants');
    assert.equal(h['ce-subject'], ID, 'ce-subject is the plant id, digit for digit');
    assert.match(String(h['ce-time']), CE_TIME);
    const event = feed.get(id)!;
    assert.ok(event, `${id} is an event of the feed`);
    assert.equal(h['ce-type'], event.type);
    assert.equal(h['ce-time'], event.createdAt.toISOString(), 'ce-time is when the change committed');
    out.set(String(h['ce-type']), { body: r.body, time: String(h['ce-time']) });
  }
  assert.deepEqual([...out.keys()].sort(), ['newPlant', 'plantDeleted', 'plantUpdated']);
  return out;
}

test('every delivery names its type in ce-* headers; format envelope signs {type, timestamp, data} around the unchanged body', async (t) => {
  const s = await startDeliveryApp(t);
  const secrets = { plain: '', envelope: '' };
  const plain = await startReceiver(t, () => secrets.plain);
  const envelope = await startReceiver(t, () => secrets.envelope);
  // Each receiver checks its deliveries against the document's body for its format.
  plain.format = 'plain';
  envelope.format = 'envelope';

  const bad = await postSubscription(s, { url: plain.url, format: 'xml' });
  assert.equal(bad.status, 400);
  assert.match((await errorOf(bad)).message, /format/);
  const made: Record<string, { id: string; secret: string; format: string }> = {};
  for (const [name, body] of [['plain', { url: plain.url }], ['envelope', { url: envelope.url, format: 'envelope' }]] as const) {
    const res = await postSubscription(s, body);
    assert.equal(res.status, 201);
    made[name] = (await res.json()) as { id: string; secret: string; format: string };
    assert.equal(made[name]!.format, name, 'plain is the default');
    secrets[name] = made[name]!.secret;
  }
  // The format shows in the listing and in each subscription; the same URL and events in the same format is a
  // duplicate, in another format another subscription.
  const manage = { authorization: `Bearer ${(await s.tokens.create({ name: 'list', scopes: ['webhooks:manage'] })).secret}` };
  const listed = (await (await fetch(`${s.url}/webhooks`, { headers: manage })).json()) as { id: string; format: string }[];
  assert.deepEqual(listed.map((w) => [w.id, w.format]), [[made.plain!.id, 'plain'], [made.envelope!.id, 'envelope']]);
  assert.equal(((await (await fetch(`${s.url}/webhooks/${made.envelope!.id}`, { headers: manage })).json()) as { format: string }).format, 'envelope');
  assert.equal((await postSubscription(s, { url: plain.url, format: 'plain' })).status, 409);

  await threeEvents(s);
  await s.dispatcher.runOnce();
  const feed = new Map((await s.store.events.readAfter(null, 10)).map((e) => [e.type, e.payload]));

  // Default format: the body is exactly the event's body; the type comes from ce-type.
  const plainBodies = await byCeType(s, plain);
  for (const [type, got] of plainBodies) assert.equal(got.body, feed.get(type), `${type}: the plain body is unchanged`);
  assert.equal(plainBodies.get('newPlant')!.body, `{"id":${ID},"name":"fern","version":${/"version":(\d+)/.exec(feed.get('newPlant')!)![1]}}`);

  // Envelope: the type is in the verified body (and agrees with ce-type); data is the plain body byte for byte.
  const envelopes = await byCeType(s, envelope);
  for (const [type, got] of envelopes) {
    assert.equal(got.body, `{"type":"${type}","timestamp":"${got.time}","data":${feed.get(type)}}`, type);
    const parsed = JSON.parse(got.body) as { type: string; timestamp: string; data: Record<string, unknown> };
    assert.equal(parsed.type, type, 'the receiver reads the type from the signed envelope');
    assert.equal(parsed.timestamp, got.time);
  }
  assert.match(envelopes.get('plantDeleted')!.body, new RegExp(`"data":\\{"id":${ID},`), 'ids in data stay exact');
});

test('webhook add --format envelope: listed with its format, and a server on the same database delivers envelopes', async (t) => {
  const env = { DATABASE_URL: await migratedDatabaseUrl(t), WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' };
  let secret = '';
  const rx = await startReceiver(t, () => secret);
  rx.format = 'envelope';
  const [added, bogus] = await Promise.all([
    runCli(['webhook', 'add', rx.url, '--format', 'envelope', '--events', 'newPlant'], env),
    runCli(['webhook', 'add', rx.url, '--format', 'cloudevents'], env),
  ]);
  assert.equal(added.code, 0, added.stderr);
  assert.match(added.stdout, /\(format envelope\)/);
  secret = added.stdout.trimEnd().split('\n').at(-1)!;
  assert.equal(bogus.code, 2, bogus.stderr);
  assert.match(bogus.stderr, /^plant-store: format: "cloudevents" is not a format; the formats are plain, envelope\.$/m);
  const list = await runCli(['webhook', 'list'], env);
  assert.equal(list.code, 0, list.stderr);
  const [header, row, ...rest] = list.stdout.trimEnd().split('\n');
  assert.match(header!, /^ID +URL +EVENTS +FORMAT +ACTIVE/);
  assert.match(row!, / newPlant +envelope +yes /);
  assert.deepEqual(rest, []);

  const s = await startDeliveryApp(t, { databaseUrl: env.DATABASE_URL });
  assert.equal(await s.postJson(`{"id": ${ID}, "name": "fern"}`), 200);
  await s.dispatcher.runOnce();
  await rx.until((r) => r.byId.size >= 1);
  assert.deepEqual(rx.problems, []);
  const [got] = [...rx.byId.values()];
  assert.equal(got!.headers['ce-type'], 'newPlant');
  assert.match(got!.body, new RegExp(`^\\{"type":"newPlant","timestamp":"[^"]+","data":\\{"id":${ID},"name":"fern","version":\\d+\\}\\}$`));
});
