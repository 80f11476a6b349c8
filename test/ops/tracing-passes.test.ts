// Sequencer passes with tracing on, run in this process (so the passes can be counted) against a real OTLP/HTTP
// collector: a pass that placed nothing and made no delivery (every poll of an idle service) exports nothing,
// not even its statements' spans; a pass that did work exports its span.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../src/config.js';
import { startTracing, stopTracing } from '../../src/tracing/tracing-switch.js';
import { openStore } from '../../src/storage/open-store.js';
import { createSequencer } from '../../src/events/sequencer.js';
import { freshDatabaseUrl, TEST_STORE } from '../helpers/app.js';
import { addSubscription } from '../helpers/webhooks.js';
import { startCollector } from '../helpers/otlp-collector.js';

test('on: idle sequencer passes export no span; the pass that makes a write\'s delivery exports one', async (t) => {
  const collector = await startCollector(t);
  await startTracing(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.url }));
  t.after(() => stopTracing());
  const { store } = await openStore(await freshDatabaseUrl(t));
  t.after(() => store.close());
  let passes = 0;
  const sequence = store.events.sequence.bind(store.events);
  store.events.sequence = (max, now) => {
    passes++;
    return sequence(max, now);
  };
  const sequencer = createSequencer({ store: store.events, retentionMs: 86_400_000 });
  t.after(() => sequencer.stop());
  await addSubscription(store, 'http://127.0.0.1:9/hook');

  for (let i = 0; i < 3; i++) await sequencer.runOnce();
  assert.equal(passes, 3);
  await store.createPlant({ id: 1n, name: 'fern' });
  // The pass that makes the write's delivery, and an idle one after it.
  await sequencer.runOnce();
  await sequencer.runOnce();
  assert.equal(passes, 5);
  // Sends what is buffered.
  await stopTracing();

  const pass = collector.spans.filter((s) => s.name === 'sequencer pass');
  assert.equal(pass.length, 1, `one pass span:\n${JSON.stringify(collector.spans, null, 1)}`);
  assert.equal(pass[0]!.attributes['plant_store.sequencer.deliveries'], 1);
  assert.equal(pass[0]!.parentSpanId, '', 'a trace of its own');
  // Nothing of the idle passes: every span exported is that pass or under it (its statements, on PostgreSQL).
  for (const s of collector.spans) assert.ok(s === pass[0] || s.parentSpanId === pass[0]!.spanId, `${s.name} is not the pass's`);
  if (TEST_STORE === 'postgres') assert.ok(collector.spans.some((s) => s.name.startsWith('pg.query')), 'the pass\'s statements are exported with it');
});
