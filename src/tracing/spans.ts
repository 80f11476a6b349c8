// The tracing every service calls, as types: the Tracing interface and its spans (no-ops when off,
// tracing-switch.ts; the OpenTelemetry SDK when on, otel-sdk.ts), and a trace context as it travels between
// processes and rows; the settings that turn it on.

/** The samplers OTEL_TRACES_SAMPLER may name (OpenTelemetry's environment variable specification). */
export const OTEL_SAMPLERS = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'] as const;

/** The OTEL_ settings tracing reads (config.ts reads them from the environment; Config has them). */
export interface TracingSettings {
  /** Where traces go: 'otlp' (OTLP over HTTP), 'none', or '' (otlp when an OTLP endpoint is set). */
  readonly otelTracesExporter: '' | 'otlp' | 'none';
  /** The OTLP/HTTP collector's base URL ('' when unset); traces go to its /v1/traces. */
  readonly otelExporterOtlpEndpoint: string;
  /** The full OTLP/HTTP traces URL, over the base endpoint's ('' when unset). */
  readonly otelExporterOtlpTracesEndpoint: string;
  readonly otelServiceName: string;
  readonly otelTracesSampler: (typeof OTEL_SAMPLERS)[number];
  /** The ratio of the traceidratio samplers, 0 to 1. */
  readonly otelTracesSamplerArg: number;
}

/** A trace context as it travels between processes and rows: the W3C Trace Context headers. */
export interface TraceHeaders {
  traceparent: string;
  tracestate?: string;
}

/** A started span of ours. */
export interface SpanHandle {
  set(key: string, value: string | number | boolean): void;
  /** Marks the span failed (the error's class only: messages may quote input). */
  fail(err?: unknown): void;
  end(): void;
  /** This span's context as headers, for what continues it elsewhere. */
  headers(): TraceHeaders | undefined;
}

/** A span whose export waits for its end, so that work which turned out to be nothing can leave no trace. */
export interface TentativeSpan extends SpanHandle {
  /** Ends it and drops it, with every span started under it: none of them is exported. */
  discard(): void;
}

export interface Tracing {
  readonly on: boolean;
  /** The context running now, as headers (undefined when none or off): what a write carries to its commit. */
  current(): TraceHeaders | undefined;
  /** Starts a span under `parent` (default: the context running now), linked to `links` (other traces it serves). */
  start(name: string, attributes?: Record<string, string | number | boolean>, parent?: TraceHeaders, links?: readonly TraceHeaders[]): SpanHandle;
  /** Starts a span of a new trace that `discard()` drops with everything under it (a pass that found nothing to do). */
  tentative(name: string): TentativeSpan;
  /**
   * A finished span under the running one (none without one), timed where it ran (another thread): `startMs`
   * and `endMs` in milliseconds since the epoch (performance.timeOrigin + performance.now() there).
   */
  record(name: string, startMs: number, endMs: number, attributes?: Record<string, string | number | boolean>): void;
  /** Runs `fn` with `span` as the running context (its callbacks and awaits included). */
  within<T>(span: SpanHandle, fn: () => T): T;
  /** trace_id and span_id of the running span, for log lines ({} when none). */
  logFields(): Record<string, string>;
  /** Sends what is buffered and stops (at shutdown). */
  shutdown(): Promise<void>;
}

/** A trace context as stored and carried in one string (a write's `trace`, an event's trace_context). */
export function traceText(headers: TraceHeaders): string {
  return JSON.stringify(headers);
}

export function traceFromText(text: string | null | undefined): TraceHeaders | undefined {
  if (!text) return undefined;
  try {
    const parsed = JSON.parse(text) as TraceHeaders;
    return typeof parsed.traceparent === 'string' ? parsed : undefined;
  } catch {
    return undefined;
  }
}
