// OpenTelemetry traces from a real `plant-store serve` to a real OTLP/HTTP collector started here: a caller's
// traceparent is joined by the request span and the commit span, under the service name; log lines name the
// trace; without the settings nothing is exported and no OpenTelemetry module is even resolved; a collector
// that is down changes no answer and loses no write.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnServer, tempDir, TEST_STORE } from '../helpers/app.js';
import { databaseWithToken } from '../helpers/cli.js';
import { eventually } from '../helpers/sleep.js';
import { OTEL_MODULE_WATCH, startCollector, type Collector } from '../helpers/otlp-collector.js';
import { openStore } from '../../src/storage/open-store.js';
import { addSubscription } from '../helpers/webhooks.js';
import { startReceiver } from '../helpers/receiver.js';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const TRACEPARENT = `00-${TRACE_ID}-00f067aa0ba902b7-01`;

/**
 * `plant-store serve` with `env`, reporting every OpenTelemetry module it resolves on standard error; with
 * `receiverOf`, a webhook receiver subscribed to every event first.
 */
async function serveWatched(t: TestContext, env: Record<string, string>, withReceiver = false) {
  const { databaseUrl, token } = await databaseWithToken(t);
  let receiver: Awaited<ReturnType<typeof startReceiver>> | undefined;
  if (withReceiver) {
    let secret = '';
    receiver = await startReceiver(t, () => secret);
    const { store } = await openStore(databaseUrl);
    try {
      secret = (await addSubscription(store, receiver.url, 'wh_traced', ['newPlant'])).secret;
    } finally {
      await store.close();
    }
  }
  const hook = join(tempDir(t), 'otel-module-watch.mjs');
  writeFileSync(hook, OTEL_MODULE_WATCH);
  const server = await spawnServer(t, {
    DATABASE_URL: databaseUrl, BOOTSTRAP_TOKEN: 'false', WORKERS: '1', WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import ${hook}`, ...env,
  });
  const post = (id: number, headers: Record<string, string> = {}) =>
    fetch(`${server.url}/plants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ id, name: 'fern' }),
    });
  const get = (id: number) => fetch(`${server.url}/plants/${id}`, { headers: { authorization: `Bearer ${token}` } });
  const feed = async () => (await (await fetch(`${server.url}/events`, { headers: { authorization: `Bearer ${token}` } })).json()) as Record<string, unknown>[];
  const getWithQuery = (query: string) => fetch(`${server.url}/plants?${query}`, { headers: { authorization: `Bearer ${token}`, traceparent: TRACEPARENT } });
  return { server, post, get, feed, receiver, token, getWithQuery };
}

function tracedBy(collector: Collector) {
  return {
    spans: () => collector.spans.filter((s) => s.traceId === TRACE_ID),
    named: (name: string) => collector.spans.filter((s) => s.traceId === TRACE_ID && s.name === name),
    dump: () => JSON.stringify(collector.spans, null, 1),
  };
}

test('on: a POST with a traceparent exports its request span and its commit span under the caller\'s trace, with the service name; log lines name the trace; spans hold no token, body or query string', async (t) => {
  const collector = await startCollector(t);
  const { server, post, token, getWithQuery } = await serveWatched(t, {
    OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_SERVICE_NAME: 'plant-store-under-test', OTEL_BSP_SCHEDULE_DELAY: '50',
  });
  assert.equal((await post(1, { traceparent: TRACEPARENT })).status, 200);
  const ofTrace = () => collector.spans.filter((s) => s.traceId === TRACE_ID);
  await eventually(() => ofTrace().some((s) => s.name === 'commit') && ofTrace().some((s) => s.name === 'request'), () => `the request and commit spans:\n${JSON.stringify(collector.spans, null, 1)}`);
  const request = ofTrace().find((s) => s.name === 'request')!;
  const commit = ofTrace().find((s) => s.name === 'commit')!;
  assert.equal(request.parentSpanId, '00f067aa0ba902b7', 'the request span continues the caller\'s span');
  assert.equal(request.service, 'plant-store-under-test');
  assert.equal(commit.service, 'plant-store-under-test');
  assert.equal(commit.attributes['plant_store.commit.size'], 1);
  assert.equal(typeof commit.attributes['plant_store.commit.wait_ms'], 'number');
  // The commit runs inside the request: its parent is a span of this trace.
  assert.ok(ofTrace().some((s) => s.spanId === commit.parentSpanId), 'the commit span\'s parent is in the trace');
  assert.equal(request.attributes['url.path'], '/plants');
  // The commit's statements and its COMMIT are spans under it: PostgreSQL's from @opentelemetry/instrumentation-pg,
  // SQLite's timed in the writer thread (the statements, then the COMMIT with its fsync, one after the other).
  const under = (name: string) => ofTrace().find((s) => s.name.startsWith(name) && s.parentSpanId === commit.spanId);
  if (TEST_STORE === 'postgres') {
    await eventually(() => under('pg.query:insertPlants') && under('pg.query:COMMIT'), () => `pg spans under the commit:\n${JSON.stringify(ofTrace(), null, 1)}`);
  } else {
    await eventually(() => under('sqlite statements') && under('sqlite commit'), () => `sqlite spans under the commit:\n${JSON.stringify(ofTrace(), null, 1)}`);
    const statements = under('sqlite statements')!;
    const committed = under('sqlite commit')!;
    assert.ok(statements.startMs <= statements.endMs && statements.endMs === committed.startMs && committed.startMs <= committed.endMs, 'the statements, then the COMMIT');
  }
  // A query string may carry a secret (access_token): spans name the path only.
  await getWithQuery('access_token=query-secret-marker');
  await eventually(() => ofTrace().filter((s) => s.name === 'request').length === 2, 'the second request span');
  const exported = JSON.stringify(collector.spans);
  for (const secret of [token, 'query-secret-marker', 'fern']) assert.ok(!exported.includes(secret), `a span holds ${secret}`);
  // GET by id, which src/plants/read-lane.ts answers outside Fastify's hooks while tracing is off, has its request span
  // (twice: the second read finds its token cached, as the lane needs).
  const read = () => fetch(`${server.url}/plants/1`, { headers: { authorization: `Bearer ${token}`, traceparent: TRACEPARENT } });
  for (let i = 0; i < 2; i++) assert.equal((await read()).status, 200);
  await eventually(() => ofTrace().filter((s) => s.name === 'request' && s.attributes['url.path'] === '/plants/1').length === 2, () => `the reads' request spans:\n${JSON.stringify(ofTrace(), null, 1)}`);
  assert.match(server.stderr(), /otel module resolved: .*@opentelemetry\/sdk-trace-node/, 'the module watch sees the SDK when tracing is on');
  // A line written inside the request's span names it.
  await eventually(() => server.stdout().split('\n').some((l) => l.includes(`"trace_id":"${TRACE_ID}"`)), () => `a log line with the trace id:\n${server.stdout()}`);
});

test('on: the delivery of the event a traced POST made carries a traceparent of that trace, from its attempt span', async (t) => {
  const collector = await startCollector(t);
  const { post, feed, receiver } = await serveWatched(t, { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_BSP_SCHEDULE_DELAY: '50' }, true);
  assert.equal((await post(7, { traceparent: `${TRACEPARENT}`, tracestate: 'vendor=abc' })).status, 200);
  // The feed shows the write's trace context: the request span of the caller's trace.
  const [event] = await eventually(async () => { const page = await feed(); return page.length === 1 && page; }, 'the event in the feed');
  assert.match(String(event!.traceparent), new RegExp(`^00-${TRACE_ID}-[0-9a-f]{16}-01$`));
  assert.equal(event!.tracestate, 'vendor=abc');
  await receiver!.until((r) => r.byId.size === 1, 10_000);
  const delivery = [...receiver!.byId.values()][0]!;
  assert.deepEqual(receiver!.problems, []);
  const traceparent = String(delivery.headers.traceparent);
  assert.match(traceparent, new RegExp(`^00-${TRACE_ID}-[0-9a-f]{16}-01$`));
  assert.equal(delivery.headers.tracestate, 'vendor=abc');
  const trace = tracedBy(collector);
  await eventually(() => trace.named('webhook attempt').length === 1, () => `the attempt span:\n${trace.dump()}`);
  const attempt = trace.named('webhook attempt')[0]!;
  assert.equal(traceparent.split('-')[2], attempt.spanId, 'the receiver continues the attempt span');
  assert.equal(attempt.attributes['plant_store.webhook.outcome'], 'succeeded');
  assert.equal(attempt.attributes['http.response.status_code'], 200);
  assert.equal(attempt.attributes['plant_store.webhook.event_type'], 'newPlant');
  // Under it, the exchange with the receiver, and under that its address check.
  const send = trace.named('webhook send').find((s) => s.parentSpanId === attempt.spanId);
  assert.ok(send, `the send span under the attempt:\n${trace.dump()}`);
  assert.equal(send.attributes['http.response.status_code'], 200);
  const check = trace.named('webhook address check').find((s) => s.parentSpanId === send.spanId);
  assert.ok(check, `the address check under the send:\n${trace.dump()}`);
  assert.equal(check.statusCode, 0, 'the address passed');
});

test('on, two workers: the commit span joins the caller\'s trace', async (t) => {
  const collector = await startCollector(t);
  const { server, post } = await serveWatched(t, { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_BSP_SCHEDULE_DELAY: '50', WORKERS: '2' });
  await eventually(() => server.stdout().includes('plant-store is listening'), 'every worker listening', 20_000);
  assert.equal((await post(3, { traceparent: TRACEPARENT })).status, 200);
  const trace = tracedBy(collector);
  await eventually(() => trace.named('request').length === 1 && trace.named('commit').length > 0, () => `the request and commit spans:\n${trace.dump()}`);
  const request = trace.named('request')[0]!;
  // SQLite: the worker hands the write to the primary, the one writer, which commits it in the same trace;
  // PostgreSQL: each worker commits its own.
  if (TEST_STORE === 'sqlite') {
    assert.notEqual(request.pid, server.proc.pid, 'a worker answered');
    await eventually(() => trace.named('commit hand-off').length === 1, () => `the worker's hand-off span:\n${trace.dump()}`);
    const handOff = trace.named('commit hand-off')[0]!;
    assert.equal(handOff.pid, request.pid, 'the hand-off is the worker\'s');
    assert.ok(trace.named('commit').every((s) => s.pid === server.proc.pid), 'every commit span is the primary\'s');
    const commit = trace.named('commit')[0]!;
    assert.ok(trace.spans().some((s) => s.spanId === commit.parentSpanId), 'the primary\'s commit span\'s parent is in the trace');
    await eventually(() => trace.named('sqlite commit').some((s) => s.parentSpanId === commit.spanId), () => `the COMMIT under the primary's commit:\n${trace.dump()}`);
  } else {
    assert.ok(trace.named('commit').some((s) => s.pid === request.pid));
    assert.equal(trace.named('commit hand-off').length, 0);
  }
});

test('off: without the settings nothing is exported and no OpenTelemetry module is resolved', async (t) => {
  const collector = await startCollector(t);
  // The collector's address is known to the process, but no OTEL_ setting names it.
  const off = await serveWatched(t, { COLLECTOR_NOT_A_SETTING: collector.url });
  const { server, post, get } = off;
  assert.equal((await post(1, { traceparent: TRACEPARENT })).status, 200);
  assert.equal((await get(1)).status, 200);
  const { feed } = off;
  const [event] = await eventually(async () => { const page = await feed(); return page.length === 1 && page; }, 'the event in the feed');
  assert.equal(event!.traceparent, undefined, 'an untraced write\'s event has no traceparent');
  server.proc.kill('SIGTERM');
  await server.exited;
  assert.equal(collector.requests, 0);
  assert.doesNotMatch(server.stderr(), /otel module resolved/);
  assert.doesNotMatch(server.stdout(), /trace_id/);
});

test('a collector that is down changes no answer and loses no write', async (t) => {
  // A port nothing listens on: a collector started and stopped.
  const collector = await startCollector(t);
  const { server, post, get } = await serveWatched(t, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', OTEL_BSP_SCHEDULE_DELAY: '10' });
  for (let id = 1; id <= 10; id++) assert.equal((await post(id, { traceparent: TRACEPARENT })).status, 200);
  for (let id = 1; id <= 10; id++) assert.equal((await get(id)).status, 200);
  server.proc.kill('SIGTERM');
  assert.equal(await server.exited, 0);
  assert.equal(collector.requests, 0);
});
