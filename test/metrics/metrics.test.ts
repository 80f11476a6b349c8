// GET /metrics: guarded by metrics:read, Prometheus text 0.0.4, and the counters move with what the service does
// (requests, group commits, authentication failures, the webhook outbox and its delivery outcomes).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { errorOf, startApp } from '../helpers/app.js';
import { addSubscription } from '../helpers/webhooks.js';
import { startReceiver } from '../helpers/receiver.js';

type Samples = Map<string, number>;

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*",?)*)\})? (\S+)( -?\d+)?$/;

/** A strict-enough parser of the text exposition format: every line is a comment, HELP/TYPE or a sample. */
function parsePrometheus(text: string): { samples: Samples; types: Map<string, string> } {
  const samples: Samples = new Map();
  const types = new Map<string, string>();
  assert.ok(text.endsWith('\n'), 'the exposition ends with a newline');
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('# HELP ') || line.startsWith('# TYPE ')) {
      const [, kind, name, ...rest] = line.split(' ');
      assert.match(name!, METRIC_NAME, line);
      if (kind === 'TYPE') {
        assert.ok(['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(rest[0]!), line);
        assert.ok(!types.has(name!), `TYPE given twice for ${name}`);
        types.set(name!, rest[0]!);
      }
      continue;
    }
    if (line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    assert.ok(m, `not a sample line: ${line}`);
    // Go's ParseFloat, which Prometheus uses, takes NaN and Inf in any case (prom-client writes "Nan").
    const raw = m[4]!;
    const value = /^[+-]?inf$/i.test(raw) ? (raw.startsWith('-') ? -Infinity : Infinity) : /^nan$/i.test(raw) ? NaN : Number(raw);
    assert.ok(!Number.isNaN(value) || /^nan$/i.test(raw), `bad value: ${line}`);
    const key = `${m[1]}${m[2] ?? ''}`;
    assert.ok(!samples.has(key), `sample given twice: ${key}`);
    samples.set(key, value);
  }
  return { samples, types };
}

async function startMetricsApp(t: TestContext) {
  const s = await startApp(t, { config: { webhookAllowedHosts: ['127.0.0.1'] }, backgroundDispatcher: false });
  const { app, store, url, sequencer, dispatcher } = s;
  const token = {
    metrics: (await s.tokens.create({ name: 'prometheus', scopes: ['metrics:read'] })).secret,
    write: s.token.all,
  };
  async function scrape(): Promise<Samples> {
    const res = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${token.metrics}` } });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4(;|$)/);
    return parsePrometheus(await res.text()).samples;
  }
  function postPlant(id: number) {
    return fetch(`${url}/plants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token.write}`, 'content-type': 'application/json' },
      body: JSON.stringify({ id, name: `plant ${id}` }),
    });
  }
  return { app, store, url, token, scrape, postPlant, sequencer, dispatcher };
}

const at = (s: Samples, key: string) => s.get(key) ?? 0;

test('GET /metrics needs a token with metrics:read: none is 401, another scope is 403', async (t) => {
  const { url, token } = await startMetricsApp(t);
  const none = await fetch(`${url}/metrics`);
  assert.equal(none.status, 401);
  assert.match(none.headers.get('www-authenticate') ?? '', /^Bearer realm="plant-store"/);
  await errorOf(none);
  const wrong = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${token.write}` } });
  assert.equal(wrong.status, 403);
  assert.match(wrong.headers.get('www-authenticate') ?? '', /error="insufficient_scope", scope="metrics:read"/);
  await errorOf(wrong);
});

test('the scrape is Prometheus text 0.0.4 with the service metrics and process metrics', async (t) => {
  const { url, token } = await startMetricsApp(t);
  const res = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${token.metrics}` } });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8');
  const { samples, types } = parsePrometheus(await res.text());
  const expected: Record<string, string> = {
    plant_store_http_requests_total: 'counter',
    plant_store_http_request_duration_seconds: 'histogram',
    plant_store_commit_batch_size: 'histogram',
    plant_store_commit_duration_seconds: 'histogram',
    plant_store_commit_failures_total: 'counter',
    plant_store_webhook_outbox_pending: 'gauge',
    plant_store_events_unplaced: 'gauge',
    plant_store_events_waiting: 'gauge',
    plant_store_counts_waiting: 'gauge',
    plant_store_webhook_events_behind: 'gauge',
    plant_store_webhook_delivery_attempts_total: 'counter',
    plant_store_auth_failures_total: 'counter',
    process_cpu_user_seconds_total: 'counter',
    process_resident_memory_bytes: 'gauge',
    nodejs_eventloop_lag_seconds: 'gauge',
    nodejs_heap_size_used_bytes: 'gauge',
  };
  for (const [name, type] of Object.entries(expected)) assert.equal(types.get(name), type, name);
  assert.equal(samples.get('plant_store_webhook_outbox_pending'), 0);
  assert.equal(samples.get('plant_store_events_unplaced'), 0);
  assert.equal(samples.get('plant_store_events_waiting'), 0);
  assert.equal(samples.get('plant_store_counts_waiting'), 0);
  assert.equal(samples.get('plant_store_webhook_events_behind'), 0);
  // HEAD answers like GET, without a body.
  const head = await fetch(`${url}/metrics`, { method: 'HEAD', headers: { authorization: `Bearer ${token.metrics}` } });
  assert.equal(head.status, 200);
});

test('requests, group commits and authentication failures move their counters', async (t) => {
  const { url, token, scrape, postPlant } = await startMetricsApp(t);
  const before = await scrape();
  assert.equal((await postPlant(1)).status, 200);
  await (await postPlant(2)).text();
  assert.equal((await fetch(`${url}/plants/1`, { headers: { authorization: `Bearer ${token.write}` } })).status, 200);
  // Authentication failures: no header, an unknown token, the wrong scope, a malformed header.
  assert.equal((await fetch(`${url}/plants`)).status, 401);
  assert.equal((await fetch(`${url}/plants`, { headers: { authorization: `Bearer pst_${'A'.repeat(43)}` } })).status, 401);
  assert.equal((await fetch(`${url}/plants`, { headers: { authorization: `Bearer ${token.metrics}` } })).status, 403);
  assert.equal((await fetch(`${url}/plants`, { headers: { authorization: 'Basic Zm9vOmJhcg==' } })).status, 401);
  assert.equal((await fetch(`${url}/no-such-path`)).status, 404);
  const after = await scrape();

  const delta = (key: string) => at(after, key) - at(before, key);
  assert.equal(delta('plant_store_http_requests_total{operation="addPlant",status="200"}'), 2);
  assert.equal(delta('plant_store_http_requests_total{operation="getPlant",status="200"}'), 1);
  assert.equal(delta('plant_store_http_requests_total{operation="listPlants",status="401"}'), 3);
  assert.equal(delta('plant_store_http_requests_total{operation="listPlants",status="403"}'), 1);
  assert.equal(delta('plant_store_http_requests_total{operation="unmatched",status="404"}'), 1);
  // The previous scrape itself was counted.
  assert.ok(delta('plant_store_http_requests_total{operation="getMetrics",status="200"}') >= 1);
  assert.equal(delta('plant_store_http_request_duration_seconds_count{operation="addPlant"}'), 2);
  assert.equal(delta('plant_store_http_request_duration_seconds_bucket{le="+Inf",operation="addPlant"}'), 2);
  // Two sequential creates: two commits of one each.
  assert.equal(delta('plant_store_commit_batch_size_count'), 2);
  assert.equal(delta('plant_store_commit_batch_size_sum'), 2);
  assert.equal(delta('plant_store_commit_duration_seconds_count'), 2);
  assert.ok(delta('plant_store_commit_duration_seconds_sum') > 0);
  assert.equal(delta('plant_store_auth_failures_total{reason="missing"}'), 1);
  assert.equal(delta('plant_store_auth_failures_total{reason="unknown"}'), 1);
  assert.equal(delta('plant_store_auth_failures_total{reason="insufficient_scope"}'), 1);
  assert.equal(delta('plant_store_auth_failures_total{reason="malformed"}'), 1);
});

test('plant changes are counted by their event: creates, updates and deletes, not replays or writes that change nothing', async (t) => {
  const { url, token, scrape, postPlant } = await startMetricsApp(t);
  const send = (method: string, body?: string) =>
    fetch(`${url}/plants/7`, {
      method,
      headers: { authorization: `Bearer ${token.write}`, ...(body !== undefined && { 'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json' }) },
      ...(body !== undefined && { body }),
    });
  const before = await scrape();
  assert.equal((await postPlant(7)).status, 200);
  assert.equal((await postPlant(7)).status, 200); // a replay
  assert.equal((await send('PUT', '{"name": "renamed"}')).status, 200);
  assert.equal((await send('PUT', '{"name": "renamed"}')).status, 200); // the same again: no change
  assert.equal((await send('PATCH', '{"tag": "t"}')).status, 200);
  assert.equal((await send('DELETE')).status, 204);
  const after = await scrape();
  const delta = (key: string) => at(after, key) - at(before, key);
  assert.equal(delta('plant_store_plant_changes_total{event="newPlant"}'), 1);
  assert.equal(delta('plant_store_plant_changes_total{event="plantUpdated"}'), 2);
  assert.equal(delta('plant_store_plant_changes_total{event="plantDeleted"}'), 1);
});

test('every served route has its own operation label: the docs page and its assets, and a method a path lacks', async (t) => {
  const { url, scrape } = await startMetricsApp(t);
  const before = await scrape();
  for (const path of ['/docs', '/docs/static/swagger-ui.css', '/docs/json', '/openapi.json']) {
    const res = await fetch(`${url}${path}`);
    assert.equal(res.status, 200, path);
    await res.arrayBuffer();
  }
  const put = await fetch(`${url}/plants`, { method: 'PUT' });
  assert.equal(put.status, 405);
  await put.arrayBuffer();
  const after = await scrape();
  const delta = (key: string) => at(after, key) - at(before, key);
  assert.equal(delta('plant_store_http_requests_total{operation="docsPage",status="200"}'), 1);
  assert.equal(delta('plant_store_http_requests_total{operation="docsAsset",status="200"}'), 2);
  assert.equal(delta('plant_store_http_requests_total{operation="getOpenApiJson",status="200"}'), 1);
  assert.equal(delta('plant_store_http_requests_total{operation="method_not_allowed",status="405"}'), 1);
  assert.equal(delta('plant_store_http_requests_total{operation="method_not_allowed",status="200"}'), 0);
});

test('concurrent creates share a commit: the batch-size histogram sees the batch', async (t) => {
  const { scrape, postPlant } = await startMetricsApp(t);
  const before = await scrape();
  const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => postPlant(100 + i)));
  assert.ok(answers.every((r) => r.status === 200));
  const after = await scrape();
  const commits = at(after, 'plant_store_commit_batch_size_count') - at(before, 'plant_store_commit_batch_size_count');
  assert.equal(at(after, 'plant_store_commit_batch_size_sum') - at(before, 'plant_store_commit_batch_size_sum'), 20);
  assert.ok(commits >= 1 && commits <= 20, `${commits} commits`);
});

test('the outbox backlog is a gauge read on scrape, and delivery outcomes are counted', async (t) => {
  const { sequencer, dispatcher, store, scrape, postPlant } = await startMetricsApp(t);
  let okSecret = '';
  let badSecret = '';
  const ok = await startReceiver(t, () => okSecret, () => ({ status: 200 }));
  const bad = await startReceiver(t, () => badSecret, () => ({ status: 500 }));
  okSecret = (await addSubscription(store, ok.url)).secret;
  badSecret = (await addSubscription(store, bad.url)).secret;

  const before = await scrape();
  assert.equal(before.get('plant_store_webhook_outbox_pending'), 0);
  assert.equal((await postPlant(7)).status, 200);
  // The deliveries are made by the sequencing pass that follows the commit.
  await sequencer.runOnce();
  const made = await scrape();
  assert.equal(made.get('plant_store_webhook_outbox_pending'), 2, 'one delivery per subscription');
  assert.equal(made.get('plant_store_events_unplaced'), 0);
  assert.equal(made.get('plant_store_webhook_events_behind'), 0, 'both subscriptions have the event');

  assert.equal(await dispatcher.runOnce(), 2);
  const after = await scrape();
  const delta = (key: string) => at(after, key) - at(before, key);
  assert.equal(delta('plant_store_webhook_delivery_attempts_total{outcome="succeeded"}'), 1);
  assert.equal(delta('plant_store_webhook_delivery_attempts_total{outcome="retrying"}'), 1);
  assert.equal(after.get('plant_store_webhook_outbox_pending'), 1, 'the delivery to retry is still pending');
  assert.equal(ok.problems.length + bad.problems.length, 0, [...ok.problems, ...bad.problems].join('\n'));
});

test('several apps in one process keep separate registries', async (t) => {
  const a = await startMetricsApp(t);
  const b = await startMetricsApp(t);
  assert.equal((await a.postPlant(1)).status, 200);
  const sa = await a.scrape();
  const sb = await b.scrape();
  assert.equal(at(sa, 'plant_store_http_requests_total{operation="addPlant",status="200"}'), 1);
  assert.equal(at(sb, 'plant_store_http_requests_total{operation="addPlant",status="200"}'), 0);
  assert.ok(sa.has('process_cpu_user_seconds_total') && sb.has('process_cpu_user_seconds_total'));
});
