// A real OTLP/HTTP collector for tests: listens on 127.0.0.1, takes what the exporter POSTs to /v1/traces
// (OTLP's JSON encoding) and keeps every span, decoded, with its resource's service.name.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestContext } from 'node:test';

export interface ExportedSpan {
  service: string;
  pid: number;
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  /** Start and end, milliseconds since the epoch (to the microsecond). */
  startMs: number;
  endMs: number;
  /** 2 is OpenTelemetry's error status. */
  statusCode: number;
  attributes: Record<string, string | number | boolean>;
  links: { traceId: string; spanId: string }[];
}

export interface Collector {
  /** The base URL (OTEL_EXPORTER_OTLP_ENDPOINT). */
  url: string;
  spans: ExportedSpan[];
  /** Export requests received (including empty ones). */
  requests: number;
}

type AnyValue = { stringValue?: string; intValue?: number | string; doubleValue?: number; boolValue?: boolean };
type KeyValue = { key: string; value: AnyValue };

function valueOf(v: AnyValue): string | number | boolean {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  return v.boolValue ?? '';
}

function attributesOf(list: KeyValue[] | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const kv of list ?? []) out[kv.key] = valueOf(kv.value);
  return out;
}

interface ExportRequest {
  resourceSpans?: {
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: {
      spans?: {
        name: string;
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        startTimeUnixNano: string | number;
        endTimeUnixNano: string | number;
        status?: { code?: number };
        attributes?: KeyValue[];
        links?: { traceId: string; spanId: string }[];
      }[];
    }[];
  }[];
}

/** OTLP's nanoseconds since the epoch (a decimal string in JSON) as milliseconds, to the microsecond. */
function nanosToMs(nanos: string | number): number {
  return Number(BigInt(nanos) / 1000n) / 1000;
}

export async function startCollector(t: TestContext): Promise<Collector> {
  const collector: Collector = { url: '', spans: [], requests: 0 };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      collector.requests++;
      if (req.url !== '/v1/traces' || !String(req.headers['content-type']).startsWith('application/json')) {
        res.writeHead(415).end();
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as ExportRequest;
      for (const rs of body.resourceSpans ?? []) {
        const resource = attributesOf(rs.resource?.attributes);
        const service = String(resource['service.name'] ?? '');
        const pid = Number(resource['process.pid']);
        for (const ss of rs.scopeSpans ?? []) {
          for (const s of ss.spans ?? []) {
            collector.spans.push({
              service,
              pid,
              name: s.name,
              traceId: s.traceId,
              spanId: s.spanId,
              parentSpanId: s.parentSpanId ?? '',
              startMs: nanosToMs(s.startTimeUnixNano),
              endMs: nanosToMs(s.endTimeUnixNano),
              statusCode: s.status?.code ?? 0,
              attributes: attributesOf(s.attributes),
              links: (s.links ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId })),
            });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  collector.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return collector;
}

/**
 * Source of a module hook (node --import) that writes one stderr line per OpenTelemetry module the process
 * resolves, through import or require: what "no OpenTelemetry module is loaded" is checked against. The API
 * package (@opentelemetry/api, a no-op facade until an SDK registers) is left out: prom-client's process
 * metrics load it in every build, with tracing or without.
 */
export const OTEL_MODULE_WATCH = `
import { registerHooks } from 'node:module';
registerHooks({
  resolve(specifier, context, next) {
    const resolved = next(specifier, context);
    if (/opentelemetry|@fastify[\\\\/]otel/.test(resolved.url) && !/@opentelemetry[\\\\/]api[\\\\/]/.test(resolved.url)) process.stderr.write('otel module resolved: ' + resolved.url + '\\n');
    return resolved;
  },
});
`;
