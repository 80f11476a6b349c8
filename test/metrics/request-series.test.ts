// The request counter and histogram kept as numbers and exposed at scrape time: the same exposition as
// prom-client's own Counter and Histogram, and the same sums across the processes of a multi-process server.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AggregatorRegistry, Registry } from 'prom-client';
import { RequestSeries } from '../../src/metrics/request-series.js';

const COUNTER = { name: 'test_requests_total', help: 'Requests.' };
const HISTOGRAM = { name: 'test_duration_seconds', help: 'Durations.' };

function registered(bounds: number[]) {
  const registry = new Registry();
  const series = new RequestSeries(bounds);
  series.register(registry, COUNTER, HISTOGRAM);
  return { registry, series };
}

test('counts by operation and status, and buckets durations as Prometheus does (le is inclusive)', async () => {
  const { registry, series } = registered([0.001, 0.01]);
  series.observe('getPlant', 200, 0.001);
  series.observe('getPlant', 200, 0.0011);
  series.observe('getPlant', 404, 20);
  series.observe('addPlant', 200, 0.005);
  const text = await registry.metrics();
  const lines = text.split('\n');
  for (const line of [
    '# TYPE test_requests_total counter',
    'test_requests_total{operation="getPlant",status="200"} 2',
    'test_requests_total{operation="getPlant",status="404"} 1',
    'test_requests_total{operation="addPlant",status="200"} 1',
    '# TYPE test_duration_seconds histogram',
    'test_duration_seconds_bucket{le="0.001",operation="getPlant"} 1',
    'test_duration_seconds_bucket{le="0.01",operation="getPlant"} 2',
    'test_duration_seconds_bucket{le="+Inf",operation="getPlant"} 3',
    'test_duration_seconds_count{operation="getPlant"} 3',
    'test_duration_seconds_bucket{le="0.001",operation="addPlant"} 0',
    'test_duration_seconds_bucket{le="0.01",operation="addPlant"} 1',
    'test_duration_seconds_sum{operation="addPlant"} 0.005',
  ]) {
    assert.ok(lines.includes(line), `${line} in:\n${text}`);
  }
  const sum = Number(lines.find((l) => l.startsWith('test_duration_seconds_sum{operation="getPlant"}'))!.split(' ')[1]);
  assert.ok(Math.abs(sum - 20.0021) < 1e-9, `sum ${sum}`);
});

test('nothing observed: the metrics are declared with no series; reset forgets what was counted', async () => {
  const { registry, series } = registered([0.1]);
  assert.equal(await registry.metrics(), '# HELP test_requests_total Requests.\n# TYPE test_requests_total counter\n\n# HELP test_duration_seconds Durations.\n# TYPE test_duration_seconds histogram\n');
  series.observe('getPlant', 200, 0.05);
  registry.resetMetrics();
  assert.doesNotMatch(await registry.metrics(), /operation=/);
});

test('the series of several processes add up, bucket by bucket', async () => {
  const a = registered([0.01]);
  const b = registered([0.01]);
  a.series.observe('getPlant', 200, 0.001);
  b.series.observe('getPlant', 200, 0.5);
  b.series.observe('getPlant', 503, 0.002);
  const merged = AggregatorRegistry.aggregate([await a.registry.getMetricsAsJSON(), await b.registry.getMetricsAsJSON()]);
  const lines = (await merged.metrics()).split('\n');
  for (const line of [
    'test_requests_total{operation="getPlant",status="200"} 2',
    'test_requests_total{operation="getPlant",status="503"} 1',
    'test_duration_seconds_bucket{le="0.01",operation="getPlant"} 2',
    'test_duration_seconds_bucket{le="+Inf",operation="getPlant"} 3',
    'test_duration_seconds_count{operation="getPlant"} 3',
  ]) {
    assert.ok(lines.includes(line), `${line} in:\n${lines.join('\n')}`);
  }
});
