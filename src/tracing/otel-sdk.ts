// Tracing on: the OpenTelemetry SDK, OTLP over HTTP (JSON), @fastify/otel for requests. Imported only by
// startTracing (tracing-switch.ts) when the settings turn tracing on; nothing else may import OpenTelemetry.
import { context, createContextKey, propagation, ROOT_CONTEXT, SpanStatusCode, trace, type Context, type Link, type Span } from '@opentelemetry/api';
import { FastifyOtelInstrumentation } from '@fastify/otel';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type ReadableSpan,
  type Sampler,
  type Span as SdkSpan,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { createRequire } from 'node:module';
import type { SpanHandle, TentativeSpan, TraceHeaders, Tracing, TracingSettings } from './spans.js';

/**
 * How long one export may take, its retries included (OTLP's default is 10 s): a collector that is down then
 * costs a batch of spans, and holds a shutdown back no longer than this.
 */
const EXPORT_TIMEOUT_MS = 2_000;
/** How long a shutdown waits for the collector to take the last spans. */
const SHUTDOWN_FLUSH_MS = EXPORT_TIMEOUT_MS;

function sampler(config: TracingSettings): Sampler {
  const ratio = () => new TraceIdRatioBasedSampler(config.otelTracesSamplerArg);
  switch (config.otelTracesSampler) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return ratio();
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: ratio() });
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

/** Where the traces go: the traces URL as given, or the base endpoint's /v1/traces (the OTLP default without either). */
function tracesUrl(config: TracingSettings): string {
  if (config.otelExporterOtlpTracesEndpoint) return config.otelExporterOtlpTracesEndpoint;
  const base = config.otelExporterOtlpEndpoint || 'http://localhost:4318';
  return `${base.replace(/\/+$/, '')}/v1/traces`;
}

function headersOf(span: Span | undefined): TraceHeaders | undefined {
  const sc = span?.spanContext();
  if (!sc || !trace.isSpanContextValid(sc)) return undefined;
  const traceparent = `00-${sc.traceId}-${sc.spanId}-0${sc.traceFlags & 1}`;
  const tracestate = sc.traceState?.serialize();
  return tracestate ? { traceparent, tracestate } : { traceparent };
}

function contextOf(headers: TraceHeaders): Context {
  return propagation.extract(ROOT_CONTEXT, headers);
}

class OtelSpan implements SpanHandle {
  constructor(readonly span: Span) {}
  set(key: string, value: string | number | boolean): void {
    this.span.setAttribute(key, value);
  }
  fail(err?: unknown): void {
    const name = err instanceof Error ? err.name : undefined;
    this.span.setStatus({ code: SpanStatusCode.ERROR, ...(name ? { message: name } : {}) });
  }
  end(): void {
    this.span.end();
  }
  headers(): TraceHeaders | undefined {
    return headersOf(this.span);
  }
}

class TentativeOtelSpan extends OtelSpan implements TentativeSpan {
  constructor(span: Span, private readonly holding: HoldingProcessor) {
    super(span);
  }
  discard(): void {
    this.holding.discard(this.span.spanContext().spanId);
    this.span.end();
  }
}

/** Marks the context a tentative span starts in (Tracing.tentative). */
const TENTATIVE = createContextKey('plant_store.tentative');

/** A tentative span and the spans started under it, held until it ends. */
interface HeldGroup {
  root: string;
  members: string[];
  ended: ReadableSpan[];
  discarded: boolean;
}

/**
 * Holds a tentative span's tree (its descendants by parent span id) until the tentative span ends, then passes
 * it on whole, or drops it whole when it was discarded. Every other span goes straight through.
 */
class HoldingProcessor implements SpanProcessor {
  private readonly held = new Map<string, HeldGroup>();
  constructor(private readonly next: SpanProcessor) {}

  onStart(span: SdkSpan, parentContext: Context): void {
    const id = span.spanContext().spanId;
    const parent = span.parentSpanContext?.spanId;
    const group = parent === undefined ? undefined : this.held.get(parent);
    if (group) {
      group.members.push(id);
      this.held.set(id, group);
    } else if (parentContext.getValue(TENTATIVE) === true) {
      this.held.set(id, { root: id, members: [id], ended: [], discarded: false });
    }
    this.next.onStart(span, parentContext);
  }

  onEnd(span: ReadableSpan): void {
    const id = span.spanContext().spanId;
    const group = this.held.get(id);
    if (!group) return this.next.onEnd(span);
    if (id !== group.root) {
      group.ended.push(span);
      return;
    }
    // What ends after the tentative span goes straight through (nothing of ours does).
    for (const member of group.members) this.held.delete(member);
    if (group.discarded) return;
    for (const s of group.ended) this.next.onEnd(s);
    this.next.onEnd(span);
  }

  /** The tentative span `spanId` is to be dropped when it ends. */
  discard(spanId: string): void {
    const group = this.held.get(spanId);
    if (group) group.discarded = true;
  }

  forceFlush(): Promise<void> {
    return this.next.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.next.shutdown();
  }
}

/**
 * PostgreSQL statements as spans (@opentelemetry/instrumentation-pg), under the span that ran them (a commit, a
 * sequencer pass, a webhook attempt's record). pg is loaded before tracing starts (statically, through ESM), so
 * no require hook would see it: the loaded modules (the same instances the store uses) are patched directly.
 */
function instrumentPg(provider: NodeTracerProvider): void {
  const pg = new PgInstrumentation({ enabled: false, requireParentSpan: true });
  pg.setTracerProvider(provider);
  const require = createRequire(import.meta.url);
  for (const definition of pg.getModuleDefinitions()) definition.patch?.(require(definition.name));
}

/** The query string may carry a client's secret (RFC 6750's access_token): spans name the path only. */
function pathOnly(url: string): string {
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

export function createTracing(config: TracingSettings): Tracing {
  // The exporter sends JSON (the OTLP/HTTP encoding every collector takes); a collector that is down loses
  // spans, never a request: the processor drops what it cannot buffer.
  const holding = new HoldingProcessor(new BatchSpanProcessor(new OTLPTraceExporter({ url: tracesUrl(config), timeoutMillis: EXPORT_TIMEOUT_MS })));
  const provider = new NodeTracerProvider({
    // process.pid tells a multi-process server's processes apart (the primary commits for its workers).
    resource: resourceFromAttributes({ 'service.name': config.otelServiceName, 'process.pid': process.pid }),
    sampler: sampler(config),
    spanProcessors: [holding],
  });
  // The W3C traceparent/tracestate propagator and the AsyncLocalStorage context every await keeps.
  provider.register();
  // Every Fastify app of this process gets the request span, joined to a caller's traceparent.
  const requests = new FastifyOtelInstrumentation({
    registerOnInitialization: true,
    instrumentHooks: false,
    // The request span is enough: a handler span per request doubled what every request exports.
    instrumentHandler: false,
    requestHook: (span, request) => span.setAttribute('url.path', pathOnly(request.url)),
  });
  requests.setTracerProvider(provider);
  instrumentPg(provider);
  const tracer = provider.getTracer('plant-store');
  return {
    on: true,
    current: () => headersOf(trace.getActiveSpan()),
    start(name, attributes, parent, links) {
      const ctx = parent ? contextOf(parent) : context.active();
      const linked: Link[] = [];
      for (const l of links ?? []) {
        const sc = trace.getSpanContext(contextOf(l));
        if (sc) linked.push({ context: sc });
      }
      return new OtelSpan(tracer.startSpan(name, { ...(attributes ? { attributes } : {}), ...(linked.length > 0 ? { links: linked } : {}) }, ctx));
    },
    tentative(name) {
      return new TentativeOtelSpan(tracer.startSpan(name, { root: true }, context.active().setValue(TENTATIVE, true)), holding);
    },
    record(name, startMs, endMs, attributes) {
      // Only as a part of a span: alone it would be a trace of its own.
      if (!trace.getActiveSpan()) return;
      tracer.startSpan(name, { startTime: startMs, ...(attributes ? { attributes } : {}) }).end(endMs);
    },
    within(span, fn) {
      if (!(span instanceof OtelSpan)) return fn();
      return context.with(trace.setSpan(context.active(), span.span), fn);
    },
    logFields(): Record<string, string> {
      const sc = trace.getActiveSpan()?.spanContext();
      return sc ? { trace_id: sc.traceId, span_id: sc.spanId } : {};
    },
    async shutdown() {
      requests.disable();
      // A collector that is down must not hold the exit back: what it has not taken by then is lost.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        provider.shutdown().catch(() => {}),
        new Promise<void>((resolve) => (timer = setTimeout(resolve, SHUTDOWN_FLUSH_MS))),
      ]);
      clearTimeout(timer);
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}
