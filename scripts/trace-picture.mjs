// Draws one trace as docs/operations.md shows it (docs/trace.svg): starts `plant-store serve` (SQLite, one
// process) with tracing on against the tests' OTLP/HTTP collector, subscribes the tests' webhook receiver (it
// verifies the signature), makes one POST /plants, collects the spans of its trace and of the sequencer pass
// that made its delivery, and writes a waterfall as plain SVG. Uses the built helpers; PostgreSQL with
// PLANT_STORE_TEST_STORE=postgres (and PLANT_STORE_TEST_PG_URL, as the tests):
//   npm run build && npm run trace-picture [-- out.svg]
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { spawnServer, TEST_STORE } from '../dist/test/helpers/app.js';
import { databaseWithToken } from '../dist/test/helpers/cli.js';
import { startCollector } from '../dist/test/helpers/otlp-collector.js';
import { startReceiver } from '../dist/test/helpers/receiver.js';
import { addSubscription } from '../dist/test/helpers/webhooks.js';
import { eventually } from '../dist/test/helpers/sleep.js';
import { openStore } from '../dist/src/storage/open-store.js';

const out = process.argv[2] ?? fileURLToPath(new URL('../docs/trace.svg', import.meta.url));

// The helpers take a test's context for their clean-up; here it runs at the end.
const cleanups = [];
const t = { after: (fn) => void cleanups.push(fn) };

/** The spans depth first, each trace from its root, children by start time. */
function rows(spans) {
  const ids = new Set(spans.map((s) => s.spanId));
  const children = new Map();
  for (const s of spans) {
    const parent = ids.has(s.parentSpanId) ? s.parentSpanId : '';
    children.set(parent, [...(children.get(parent) ?? []), s]);
  }
  const out = [];
  const walk = (parent, depth) => {
    for (const s of (children.get(parent) ?? []).sort((a, b) => a.startMs - b.startMs)) {
      out.push({ span: s, depth });
      walk(s.spanId, depth + 1);
    }
  };
  walk('', 0);
  return out;
}

const escape = (text) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** What a row says besides its name: the attributes that tell this span from another of its kind. */
function detail(s) {
  const a = s.attributes;
  if (s.name === 'request') return `${a['http.request.method']} ${a['http.route']} ${a['http.response.status_code']}`;
  if (s.name === 'commit') return `${a['plant_store.commit.size']} write, waited ${a['plant_store.commit.wait_ms']} ms`;
  if (s.name === 'webhook attempt') return `${a['plant_store.webhook.outcome']}`;
  if (s.name === 'webhook send') return `HTTP ${a['http.response.status_code']}`;
  if (s.name === 'sequencer pass') return `own trace: ${a['plant_store.sequencer.deliveries']} delivery`;
  if (s.name.startsWith('pg.')) return '';
  return '';
}

const COLORS = { request: '#4e79a7', commit: '#f28e2b', sqlite: '#e15759', webhook: '#59a14f', sequencer: '#b07aa1', pg: '#e15759' };
const colorOf = (name) => COLORS[name.split(/[ .:]/)[0]] ?? '#9c9c9c';

/** The waterfall: one row per span on a common time axis, and a mark where the receiver got the delivery. */
function waterfall(list, received) {
  const labelW = 330;
  const barW = 560;
  const rowH = 22;
  const top = 58;
  const t0 = Math.min(...list.map((r) => r.span.startMs));
  const t1 = Math.max(...list.map((r) => r.span.endMs), received.at);
  const scale = barW / (t1 - t0);
  const x = (ms) => Math.round((labelW + (ms - t0) * scale) * 10) / 10;
  const height = top + (list.length + 1) * rowH + 44;
  const width = labelW + barW + 140;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="#ffffff"/>`,
    `<text x="10" y="20" font-size="14" font-weight="bold">One POST /plants, from the request to the receiver (${(t1 - t0).toFixed(1)} ms)</text>`,
  ];
  // The time axis: a tick every step.
  const step = [0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500].find((s) => (t1 - t0) / s <= 10) ?? 1000;
  for (let ms = 0; ms <= t1 - t0; ms += step) {
    parts.push(`<line x1="${x(t0 + ms)}" y1="${top - 8}" x2="${x(t0 + ms)}" y2="${height - 44}" stroke="#e0e0e0"/>`);
    parts.push(`<text x="${x(t0 + ms)}" y="${top - 12}" text-anchor="middle" fill="#666">${ms} ms</text>`);
  }
  list.forEach(({ span, depth }, i) => {
    const y = top + i * rowH;
    const w = Math.max(1, (span.endMs - span.startMs) * scale);
    const ms = span.endMs - span.startMs;
    const what = detail(span);
    parts.push(`<text x="${10 + depth * 14}" y="${y + 15}">${escape(span.name.split(' plantstore')[0])}${what ? ` <tspan fill="#666">${escape(what)}</tspan>` : ''}</text>`);
    parts.push(`<rect x="${x(span.startMs).toFixed(1)}" y="${y + 4}" width="${w.toFixed(1)}" height="${rowH - 8}" rx="2" fill="${colorOf(span.name)}"${span.statusCode === 2 ? ' stroke="#c00" stroke-width="2"' : ''}/>`);
    parts.push(`<text x="${(x(span.startMs) + w + 4).toFixed(1)}" y="${y + 15}" fill="#333">${ms < 1 ? ms.toFixed(2) : ms.toFixed(1)} ms</text>`);
  });
  const y = top + list.length * rowH;
  const rx = x(received.at);
  parts.push(`<text x="10" y="${y + 15}" font-style="italic">the receiver gets it <tspan fill="#666">(traceparent: the attempt ${received.parent.slice(0, 6)}…)</tspan></text>`);
  parts.push(`<path d="M ${rx.toFixed(1)} ${y + 4} l 6 7 l -6 7 l -6 -7 z" fill="#333"/>`);
  parts.push(`<text x="10" y="${height - 24}" fill="#666">plant-store on Node.js ${escape(process.version)}, ${TEST_STORE === 'sqlite' ? 'SQLite' : 'PostgreSQL'}, tracing on; drawn by npm run trace-picture. Times vary from run to run;</text>`);
  parts.push(`<text x="10" y="${height - 8}" fill="#666">OpenTelemetry JS starts a span on the millisecond clock, so offsets under 1 ms between spans are approximate.</text>`);
  parts.push('</svg>');
  return parts.join('\n') + '\n';
}

async function main() {
  try {
    const collector = await startCollector(t);
    const { databaseUrl, token } = await databaseWithToken(t);
    let secret = '';
    const receiver = await startReceiver(t, () => secret);
    const { store } = await openStore(databaseUrl);
    try {
      secret = (await addSubscription(store, receiver.url, 'wh_picture', ['newPlant'])).secret;
    } finally {
      await store.close();
    }
    const server = await spawnServer(t, {
      DATABASE_URL: databaseUrl, BOOTSTRAP_TOKEN: 'false', WORKERS: '1', WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_SERVICE_NAME: 'plant-store', OTEL_BSP_SCHEDULE_DELAY: '50',
    });
    // A warm-up write first, so the picture shows a served write rather than the first one's start-up costs.
    const post = (id) =>
      fetch(`${server.url}/plants`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ id, name: 'fern' }) });
    if ((await post(1)).status !== 200) throw new Error('the warm-up POST failed');
    await receiver.until((r) => r.byId.size === 1, 10_000);
    const res = await post(2);
    if (res.status !== 200) throw new Error(`POST /plants answered ${res.status}`);
    await receiver.until((r) => r.byId.size === 2, 10_000);
    const delivery = [...receiver.byId.values()][1];
    if (receiver.problems.length > 0) throw new Error(`the receiver: ${receiver.problems.join('; ')}`);
    const traceId = String(delivery.headers.traceparent).split('-')[1];
    const attempt = await eventually(
      () => collector.spans.find((s) => s.traceId === traceId && s.name === 'webhook attempt'),
      'the attempt span',
      10_000,
    );
    const request = collector.spans.find((s) => s.traceId === traceId && s.name === 'request');
    // The pass that made the delivery: a trace of its own, between the commit and the attempt.
    const pass = collector.spans.find((s) => s.name === 'sequencer pass' && s.startMs >= request.startMs && s.startMs <= attempt.startMs);
    const spans = collector.spans.filter((s) => s.traceId === traceId || (pass && s.traceId === pass.traceId));
    server.proc.kill('SIGTERM');
    await server.exited;
    writeFileSync(out, waterfall(rows(spans), { at: delivery.at, parent: String(delivery.headers.traceparent).split('-')[2] }));
    console.log(`wrote ${out}: ${spans.length} spans of trace ${traceId}${pass ? ` and the pass ${pass.traceId}` : ''}`);
  } finally {
    for (const fn of cleanups.reverse()) await fn();
  }
}

await main();
