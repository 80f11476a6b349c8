// Every example of openapi/plant-store.yaml is what the service answers: each operation's example request
// (path and query parameters from their examples, the request body example) is sent to a real server on
// 127.0.0.1, with the state it needs made first (the plant, the subscription, the failed delivery), and the
// answer is compared with the response example of its status: the status, and the body member for member.
// Deliveries the receivers get are compared with the `webhooks` section's examples the same way.
//
// Generated values cannot equal an example, so they are held to their shape instead (GENERATED, in
// examples-live-support.ts): ids the service makes (`wh_`, `dlv_`, `msg_`), times, versions, durations, the
// signing secret, and the service's own version. An example's made id stands for one real id throughout its answer (and its message),
// so an answer that names two different subscriptions where the example names one still fails.
//
// One server, requests in order, and a second one for the examples of limits and ends: small rate limits and
// waiting caps, a store recorded as restored from a backup, and a shutdown. Meanwhile a request to the first
// does not arrive within its REQUEST_TIMEOUT_MS (408); at the end its clock moves past EVENT_RETENTION (the
// retention 410) and its store is closed (503). Headers are checked too: every required one sent, every
// declared one sent valid for its schema, and those a case names (Retry-After) sent. An example no request can
// make (the 500 of a failure inside the service) is named in SKIPPED (examples-live-support.ts) with the reason,
// and every other example of the document must be checked: a new example fails this test until it is.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import YAML from 'yaml';
import { openStore } from '../../src/storage/open-store.js';
import { markRestored } from '../../src/storage/restores.js';
import { freshDatabaseUrl, startApp } from '../helpers/app.js';
import { openStream, sequenced } from '../helpers/events.js';
import { parseExact } from '../helpers/exact-json.js';
import { eventually } from '../helpers/sleep.js';
import { startReceiver } from '../helpers/receiver.js';
import { exampleChecker } from './examples-live-checker.js';
import { allExamplePlaces, DOC, exchange, LIMITS, NOW, operation, REQUEST_TIMEOUT_MS, RETENTION_MS, SKIPPED, unfinished, type Node } from './examples-live-support.js';

test('every example request, sent to the service, is answered as the document\'s example for its status', async (t) => {
  // Fixed at NOW until the retention 410 moves it on.
  let clockAt = NOW;
  const s = await startApp(t, {
    clock: { now: () => clockAt },
    // REQUIRE_IF_MATCH, so that the 428 example is answered; the writes below send the ETag they read.
    // greenhouse.example.com is the examples' receiver: it needs no DNS when allowed by name.
    config: {
      requireIfMatch: true,
      webhookAllowedHosts: ['127.0.0.1', 'greenhouse.example.com'],
      requestTimeoutMs: REQUEST_TIMEOUT_MS,
      headersTimeoutMs: REQUEST_TIMEOUT_MS,
      eventRetentionMs: RETENTION_MS,
    },
    dispatcher: {},
    backgroundDispatcher: false,
  });
  // The example create, never finished: answered 408 once REQUEST_TIMEOUT_MS has passed, while the rest runs.
  const timedOut = unfinished(s.port, s.token.write);
  timedOut.catch(() => {}); // awaited below; a failure fails the test there
  const token = async (scopes: string[]) => (await s.tokens.create({ name: scopes.join('+'), scopes: scopes as never })).secret;
  const tokens = {
    all: await token(['plants:read', 'plants:write', 'webhooks:manage', 'metrics:read', 'tokens:manage']),
    read: s.token.read,
    manageOnly: await token(['webhooks:manage']),
  };
  const { problems, checked, call, documented, compare, expectExample, expectPart } = exampleChecker(s, tokens.all);

  // ---- Subscriptions, before any plant exists (the examples' receiver is never called).
  const created = await call('createWebhook');
  const hookIds = expectExample('createWebhook', created, 201);
  const hookId = hookIds.get('wh_Vh3q9LmT0xKa2bYc') ?? '';
  if (created.headers.location !== `/webhooks/${hookId}`) problems.push(`createWebhook 201: Location ${created.headers.location}`);
  expectExample('createWebhook', await call('createWebhook'), 409, { ids: { wh_Vh3q9LmT0xKa2bYc: hookId } });
  expectExample('createWebhook', await call('createWebhook', { token: tokens.manageOnly }), 403);
  expectExample('createWebhook', await call('createWebhook', { body: `{"url":"https://${'x'.repeat(1_048_576)}"}` }), 413);
  expectExample('getWebhook', await call('getWebhook', { path: { id: hookId } }), 200, { ids: { wh_Vh3q9LmT0xKa2bYc: hookId } });
  expectExample('listWebhooks', await call('listWebhooks'), 200, { ids: { wh_Vh3q9LmT0xKa2bYc: hookId } });
  expectExample('deleteWebhook', await call('deleteWebhook', { path: { id: hookId } }), 204);
  // The example's id names no subscription now.
  expectExample('recoverWebhookDeliveries', await call('recoverWebhookDeliveries'), 404);

  // ---- Tokens: the example token is made at NOW, read as itself, listed, and revoked.
  const tokenMade = await call('createToken');
  const tokenId = expectExample('createToken', tokenMade, 201).get('tok_q3XbT0aRzN8cW1yH') ?? '';
  const madeSecret = String((JSON.parse(tokenMade.text) as { secret?: string }).secret);
  expectExample('getCurrentToken', await call('getCurrentToken', { token: madeSecret }), 200, { ids: { tok_q3XbT0aRzN8cW1yH: tokenId } });
  // The list holds the test's other tokens too: the example is held to the made token's entry.
  const tokenList = await call('listTokens', { query: {} });
  const madeEntry = tokenList.status === 200 ? (JSON.parse(tokenList.text) as Node[]).filter((x) => x.id === tokenId) : [];
  expectExample('listTokens', { ...tokenList, text: JSON.stringify(madeEntry) }, 200, { ids: { tok_q3XbT0aRzN8cW1yH: tokenId } });
  const grantsTokens = await token(['tokens:manage', 'plants:read']);
  expectExample('createToken', await call('createToken', { token: grantsTokens, body: { name: 'too much', scopes: ['plants:read', 'plants:write', 'metrics:read'] } }), 403);
  expectExample('revokeToken', await call('revokeToken', { path: { id: tokenId } }), 204);

  // ---- Plants. The examples' neighbours first: the list's other plant and one the list must skip.
  for (const json of ['{"id":10041,"name":"Ficus lyrata"}', '{"id":9223372036854775807,"name":"Strelitzia nicolai","tag":"tropical"}']) {
    const res = await call('addPlant', { body: json });
    assert.equal(res.status, 200, res.text);
  }
  await sequenced(s.store, { now: () => NOW });
  const before = parseExact((await call('listEvents', { query: {} })).text) as Node[];
  const lastBefore = String(before.at(-1)?.id);

  // The second server, started meanwhile: its store restored from a backup taken before the events above (of an
  // empty store), so that their ids name events the restore lost. What `plant-store migrate --after-restore`
  // does to the stopped store, as docs/backup.md has it, in this process: test/cli/restore-versions.test.ts
  // runs the command itself, after a real backup and restore.
  const second = (async () => {
    const databaseUrl = await freshDatabaseUrl(t);
    const { store } = await openStore(databaseUrl);
    await markRestored(store.restores, new Date()).finally(() => store.close());
    return startApp(t, { databaseUrl, config: LIMITS });
  })();
  second.catch(() => {});

  // Subscriptions that will have deliveries: `waiting` (the 503 receiver; the deliveries example), `gone` (410,
  // then 200: recover), `updates` (the envelope of updates and deletes).
  let goneStatus = 410;
  const waitingReceiver = await startReceiver(t, () => secrets.waiting, () => ({ status: 503 }));
  const goneReceiver = await startReceiver(t, () => secrets.gone, () => ({ status: goneStatus }));
  const updatesReceiver = await startReceiver(t, () => secrets.updates);
  const subscribe = async (url: string, events: string[], format: string) => {
    const res = await call('createWebhook', { body: { url, events, format } });
    assert.equal(res.status, 201, res.text);
    return JSON.parse(res.text) as { id: string; secret: string };
  };
  const waiting = await subscribe(waitingReceiver.url, ['newPlant'], 'envelope');
  const gone = await subscribe(goneReceiver.url, ['newPlant', 'plantUpdated', 'plantDeleted'], 'plain');
  const updates = await subscribe(updatesReceiver.url, ['plantUpdated', 'plantDeleted'], 'envelope');
  const secrets = { waiting: waiting.secret, gone: gone.secret, updates: updates.secret };
  waitingReceiver.format = 'envelope';
  goneReceiver.format = 'plain';
  updatesReceiver.format = 'envelope';

  const added = await call('addPlant', { token: s.token.write });
  expectExample('addPlant', added, 200);
  if (added.headers.location !== documented('addPlant', 200).response.headers.Location.example) problems.push(`addPlant 200: Location ${added.headers.location}`);
  expectExample('addPlant', await call('addPlant', { body: { id: 10042n, name: 'Monstera adansonii' } }), 409);
  expectExample('addPlant', await call('addPlant', { headers: { 'content-type': 'text/plain' } }), 415);
  expectExample('addPlant', await call('addPlant', { body: `{"id":1,"name":"${'x'.repeat(1_048_576)}"}` }), 413);
  expectExample('addPlant', await call('addPlant', { token: tokens.read }), 403);
  expectExample('addPlant', await call('addPlant', { headers: { expect: 'something-else' }, raw: true }), 417);
  expectExample('addPlant', await call('addPlant', { headers: { 'x-padding': 'x'.repeat(17_000) }, raw: true }), 431);

  const list = await call('listPlants');
  expectExample('listPlants', list, 200);
  const listHead = await call('headListPlants');
  if (listHead.status !== 200 || listHead.text !== '') problems.push(`headListPlants: ${listHead.status} ${listHead.text.slice(0, 100)}`);
  expectExample('listPlants', await call('listPlants', { query: { name: 'Monstera' } }), 400);
  expectExample('listPlants', await call('listPlants', { token: 'pst_' + 'A'.repeat(43) }), 401);
  // fetch refuses TRACE; this is the example's own method.
  expectExample('listPlants', await exchange(s.port, 'TRACE', '/plants', {}), 405);

  const got = await call('getPlant');
  expectExample('getPlant', got, 200);
  const head = await call('headGetPlant');
  if (head.status !== 200 || head.text !== '' || head.headers.etag !== got.headers.etag) problems.push(`headGetPlant: ${head.status}, ETag ${head.headers.etag}`);
  expectExample('updatePlant', await call('updatePlant'), 428);
  const put = await call('updatePlant', { headers: { 'if-match': got.headers.etag ?? '' } });
  expectExample('updatePlant', put, 200);
  const patched = await call('patchPlant', { headers: { 'if-match': put.headers.etag ?? '' } });
  expectExample('patchPlant', patched, 200);
  expectExample('deletePlant', await call('deletePlant', { headers: { 'if-match': patched.headers.etag ?? '' } }), 204);
  expectExample('getPlant', await call('getPlant'), 404);

  // ---- The feed: the events of the example plant, after the last event before it (the `after` example).
  await sequenced(s.store, { now: () => NOW });
  // The query's examples (a header's, Last-Event-ID, is a stream's cursor), but types: its example leaves out the
  // plantUpdated the page's example holds.
  const exampleQuery = Object.fromEntries(
    (operation('listEvents').op.parameters as Node[]).filter((p) => p.in === 'query' && p.name !== 'types' && p.name !== 'ticket').map((p) => [p.name, String(p.example)]),
  );
  const events = await call('listEvents', { query: { ...exampleQuery, after: lastBefore } });
  const eventIds = expectExample('listEvents', events, 200);
  const newPlantEvent = eventIds.get('msg_2KWPBgLlAfxdpx2AI54pPJ');
  // A stream ticket: made at NOW, it lives the default EVENTS_TICKET_SECONDS, which is the example's expiresAt.
  // Its ticketExpired answer comes once the clock moves (below).
  const ticketMade = await call('createEventTicket', { token: tokens.read });
  expectExample('createEventTicket', ticketMade, 201);
  const ticket = String((JSON.parse(ticketMade.text) as { ticket?: string }).ticket);
  expectExample('listEvents', await call('listEvents', { token: 'pst_' + 'E'.repeat(43), query: {} }), 401, { name: 'invalidToken', headers: ['www-authenticate'] });

  // ---- Deliveries: one round of attempts. `waiting` is answered 503 (pending, its next try due in 5 s of a
  // clock that does not move); `gone` is answered 410, which disables it and cancels the rest.
  await s.dispatcher.runOnce();
  const deliveries = await call('listWebhookDeliveries', { path: { id: waiting.id } });
  const deliveryIds = expectExample('listWebhookDeliveries', deliveries, 200, { ids: newPlantEvent ? { msg_2KWPBgLlAfxdpx2AI54pPJ: newPlantEvent } : {} });
  expectExample('recoverWebhookDeliveries', await call('recoverWebhookDeliveries', { path: { id: gone.id } }), 409, { ids: { wh_Vh3q9LmT0xKa2bYc: gone.id } });
  const cancelled = (parseExact((await call('listWebhookDeliveries', { path: { id: gone.id }, query: {} })).text) as Node[])[0];
  expectExample('retryWebhookDelivery', await call('retryWebhookDelivery', { path: { id: gone.id, deliveryId: String(cancelled?.id) } }), 409, {
    ids: { wh_Vh3q9LmT0xKa2bYc: gone.id },
  });
  expectExample('recoverWebhookDeliveries', await call('recoverWebhookDeliveries', { path: { id: gone.id }, body: { since: '2027-01-01T00:00:00Z' } }), 400, {
    exactTimes: true, // the request's time, and the server's clock (NOW)
  });
  // `plant-store webhook enable` does this (test/cli/webhook-commands.test.ts); then every delivery since the
  // example's `since` is queued again and, the receiver back, delivered.
  await s.store.webhooks.enableSubscription(gone.id);
  expectExample('recoverWebhookDeliveries', await call('recoverWebhookDeliveries', { path: { id: gone.id } }), 202);
  goneStatus = 200;
  await s.dispatcher.runOnce();
  const dlv = deliveryIds.get('dlv_5f0c9a1e7b2d4c83a6e1f09b') ?? '';
  expectExample('retryWebhookDelivery', await call('retryWebhookDelivery', { path: { id: waiting.id, deliveryId: dlv } }), 202, {
    ids: { dlv_5f0c9a1e7b2d4c83a6e1f09b: dlv, ...(newPlantEvent && { msg_2KWPBgLlAfxdpx2AI54pPJ: newPlantEvent }) },
  });

  // ---- What the receivers got: each webhook's plain and envelope examples.
  const deliveryExample = (type: string, name: string, body: string | undefined) => {
    const media = DOC.webhooks[type].post.requestBody.content['application/json'];
    const place = `#/webhooks/${type}/post/requestBody/examples/${name}`;
    if (body === undefined) return void problems.push(`${place}: no such delivery received`);
    checked.add(place);
    const out: string[] = [];
    compare(parseExact(body), media.examples[name].value, '', new Map(), out);
    problems.push(...out.map((p) => `${place}: ${p}`));
  };
  const bodyOf = (r: typeof goneReceiver, type: string) => [...r.byId.values()].find((x) => x.headers['ce-type'] === type)?.body;
  for (const type of ['newPlant', 'plantUpdated', 'plantDeleted']) deliveryExample(type, 'plain', bodyOf(goneReceiver, type));
  deliveryExample('newPlant', 'envelope', bodyOf(waitingReceiver, 'newPlant'));
  for (const type of ['plantUpdated', 'plantDeleted']) deliveryExample(type, 'envelope', bodyOf(updatesReceiver, type));
  for (const r of [waitingReceiver, goneReceiver, updatesReceiver]) problems.push(...r.problems);

  // ---- Operations of the service itself.
  for (const id of ['getRoot', 'getHealth', 'getReadiness']) expectExample(id, await call(id, { token: null }), 200);
  const subset = (actual: unknown, example: unknown): boolean =>
    example !== null && typeof example === 'object'
      ? actual !== null && typeof actual === 'object' && Object.entries(example).every(([k, v]) => subset((actual as Node)[k], v))
      : actual === example;
  expectPart('getOpenApiJson', await call('getOpenApiJson', { token: null }), (example) => (a) => subset(parseExact(a), example));
  expectPart('getOpenApiYaml', await call('getOpenApiYaml', { token: null }), (example) => (a) => subset(YAML.parse(a), example));
  // The example's sample line counts this run's creates instead of its 1042.
  const sample = (line: string) => line.replace(/ \d+$/, ' <n>');
  expectPart('getMetrics', await call('getMetrics'), (example) => (text) => {
    const lines = new Set(text.split('\n').map(sample));
    return String(example).trimEnd().split('\n').every((line) => lines.has(sample(line)));
  });

  // ---- Limits and ends, on the second server.
  const b = await second;
  const bToken = async (name: string) => (await b.tokens.create({ name, scopes: ['plants:read'] })).secret;
  // A feed cursor of the first server's: an event made after the backup the second one was restored from.
  const firstEvent = String(before[0]?.id);
  expectExample('listEvents', await call('listEvents', { server: b, token: b.token.read, query: { after: firstEvent } }), 410, {
    name: 'restored',
    ids: { msg_AZzryKD18kCq1vR0yT6wLg: firstEvent },
  });
  // A token's quota (RATE_LIMIT_PER_TOKEN) spent: every operation's 429, the feed's included.
  const spent = await bToken('spent');
  for (let i = 0; i < LIMITS.rateLimitPerToken; i++) assert.equal((await call('listPlants', { server: b, token: spent })).status, 200);
  expectExample('listPlants', await call('listPlants', { server: b, token: spent }), 429, {
    name: 'rateLimited',
    headers: ['retry-after', 'ratelimit', 'ratelimit-policy'],
  });
  expectExample('listEvents', await call('listEvents', { server: b, token: spent, query: {} }), 429, {
    name: 'rateLimited',
    headers: ['retry-after', 'ratelimit', 'ratelimit-policy'],
  });
  // This address's failures (AUTH_FAILURES_PER_MINUTE) spent: an unknown token is refused before it is judged.
  const unknown = 'pst_' + 'A'.repeat(43);
  for (let i = 0; i < LIMITS.authFailuresPerMinute; i++) assert.equal((await call('listPlants', { server: b, token: unknown })).status, 401);
  expectExample('listPlants', await call('listPlants', { server: b, token: unknown }), 429, {
    name: 'authFailures',
    headers: ['retry-after', 'ratelimit', 'ratelimit-policy'],
  });
  // Waiting places: a token's one (EVENTS_MAX_WAITING_PER_TOKEN), then the instance's two (EVENTS_MAX_WAITING).
  const waits = (n: number) =>
    eventually(async () => new RegExp(`^plant_store_events_waiting ${n}$`, 'm').test(await b.app.metrics.scrape()), `${n} requests waiting`, 10_000);
  const [w1, w2, w3] = [await bToken('w1'), await bToken('w2'), await bToken('w3')];
  const wait = (token: string) => call('listEvents', { server: b, token, query: { wait: '30' } });
  const held = [wait(w1)];
  await waits(1);
  expectExample('listEvents', await wait(w1), 429, { name: 'tokenWaiting', headers: ['retry-after'] });
  held.push(wait(w2));
  await waits(2);
  expectExample('listEvents', await wait(w3), 503, { name: 'waitingFull', headers: ['retry-after'] });
  // Streams (Accept: text/event-stream): a token's one (EVENTS_MAX_STREAMS_PER_TOKEN), then the instance's two
  // (EVENTS_MAX_STREAMS). The refusals are ordinary answers, read whole; the open streams are held aside.
  const [s1, s2, s3] = [await bToken('s1'), await bToken('s2'), await bToken('s3')];
  const streamAsked = (token: string) => call('listEvents', { server: b, token, query: {}, headers: { accept: 'text/event-stream' } });
  const streams = [await openStream(b.url, s1)];
  expectExample('listEvents', await streamAsked(s1), 429, { name: 'tokenStreams', headers: ['retry-after'] });
  streams.push(await openStream(b.url, s2));
  expectExample('listEvents', await streamAsked(s3), 503, { name: 'streamsFull', headers: ['retry-after'] });
  assert.deepEqual(streams.map((x) => x.status), [200, 200]);
  // A shutdown answers the waiting requests (no events), ends the streams, and refuses what comes after.
  b.app.drain();
  assert.deepEqual(await Promise.all(streams.map((x) => x.ended)), ['ended', 'ended']);
  for (const answer of await Promise.all(held)) assert.deepEqual([answer.status, answer.text], [200, '[]']);
  expectExample('listEvents', await wait(w3), 503, { name: 'shuttingDown', headers: ['retry-after'] });

  expectExample('addPlant', await timedOut, 408);

  // ---- The first server once its clock is past EVENT_RETENTION: the events no delivery waits for are removed.
  clockAt = Date.now() + RETENTION_MS + 60_000;
  assert.ok((await s.sequencer.retainOnce()) > 0, 'the retention pass removed nothing');
  expectExample('listEvents', await call('listEvents', { query: { after: firstEvent } }), 410, { name: 'retention', ids: { msg_2KWPBgLlAfxdpx2AI54pPJ: firstEvent } });
  expectExample('listEvents', await call('listEvents', { token: null, query: { ticket }, headers: { accept: 'text/event-stream' } }), 401, {
    name: 'ticketExpired',
    headers: ['www-authenticate'],
  });
  // And its store closed: the example create is refused.
  await s.store.close();
  expectExample('addPlant', await call('addPlant'), 503, { headers: ['retry-after'] });

  const missing = allExamplePlaces().filter((p) => !checked.has(p) && !(p in SKIPPED));
  assert.deepEqual(problems, []);
  assert.deepEqual(missing, [], 'examples of the document this test does not check');
});
