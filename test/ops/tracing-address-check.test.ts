// The webhook sender with tracing on, in this process, to a real receiver by host name: its address check is a
// span under the running one that covers the guarded lookup at connect time (a name, unlike an IP literal, is
// checked there), and a lookup that refuses the address fails it. Exported to a real OTLP/HTTP collector.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadConfig } from '../../src/config.js';
import { startTracing, stopTracing, tracing } from '../../src/tracing/tracing-switch.js';
import { createSender } from '../../src/webhooks/sender.js';
import { generateWebhookSecret } from '../../src/webhooks/signing.js';
import { startCollector } from '../helpers/otlp-collector.js';

test('on: a send to a host name has its address check span, failed when the lookup refuses the address', async (t) => {
  const collector = await startCollector(t);
  await startTracing(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.url }));
  t.after(() => stopTracing());
  const receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => receiver.close(() => resolve())));
  const url = `http://localhost:${(receiver.address() as AddressInfo).port}/hook`;
  const secret = generateWebhookSecret();
  /** One send under a span of its own, as the dispatcher's attempt runs it; returns the result and that span's id. */
  const sendUnder = async (name: string, allowedHosts: string[]) => {
    const span = tracing.start(name);
    const send = createSender({ timeoutMs: 5_000, allowedHosts });
    try {
      return await tracing.within(span, () => send({ url, secret, eventId: 'msg_check', payload: '{}' }));
    } finally {
      span.end();
    }
  };

  // localhost is allowed here: the lookup finds 127.0.0.1 and the send goes through.
  assert.equal((await sendUnder('allowed', ['localhost'])).statusCode, 204);
  // Without the allowance the lookup refuses a loopback address: nothing is sent.
  const refused = await sendUnder('refused', []);
  assert.equal(refused.refused, true);
  assert.equal(refused.statusCode, null);
  await stopTracing();

  const checkUnder = (name: string) => {
    const parent = collector.spans.find((s) => s.name === name)!;
    return collector.spans.find((s) => s.name === 'webhook address check' && s.parentSpanId === parent.spanId);
  };
  const passed = checkUnder('allowed');
  assert.ok(passed, `the address check under the send:\n${JSON.stringify(collector.spans, null, 1)}`);
  assert.equal(passed.statusCode, 0);
  const failed = checkUnder('refused');
  assert.ok(failed, 'the refused send\'s address check');
  assert.equal(failed.statusCode, 2, 'the refused address check has error status');
});
