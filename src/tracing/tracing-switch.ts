// Traces (OpenTelemetry), off unless the OTEL_ settings turn them on (config.ts). Services call `tracing` and
// never OpenTelemetry itself: off, every call here is a no-op behind one boolean, and no OpenTelemetry module
// is loaded (startTracing imports otel-sdk.ts, and with it the SDK, only when tracing is on).
import type { TentativeSpan, Tracing, TracingSettings } from './spans.js';

const NO_SPAN: TentativeSpan = { set() {}, fail() {}, end() {}, discard() {}, headers: () => undefined };

const OFF: Tracing = {
  on: false,
  current: () => undefined,
  start: () => NO_SPAN,
  tentative: () => NO_SPAN,
  record: () => {},
  within: (_span, fn) => fn(),
  logFields: () => ({}),
  shutdown: async () => {},
};

/** Whether the OpenTelemetry settings turn tracing on (OTEL_TRACES_EXPORTER=otlp, or an OTLP endpoint without OTEL_TRACES_EXPORTER=none). */
export function tracingOn(c: Pick<TracingSettings, 'otelTracesExporter' | 'otelExporterOtlpEndpoint' | 'otelExporterOtlpTracesEndpoint'>): boolean {
  if (c.otelTracesExporter !== '') return c.otelTracesExporter === 'otlp';
  return c.otelExporterOtlpEndpoint !== '' || c.otelExporterOtlpTracesEndpoint !== '';
}

/** This process's tracing: OFF until startTracing turns it on. */
export let tracing: Tracing = OFF;

/** Turns tracing on when the settings ask for it, before anything it should see starts (the app, the store). */
export async function startTracing(config: TracingSettings): Promise<void> {
  if (!tracingOn(config) || tracing.on) return;
  const { createTracing } = await import('./otel-sdk.js');
  tracing = createTracing(config);
}

/** Stops tracing after sending what is buffered (tests start several servers in one process). */
export async function stopTracing(): Promise<void> {
  const stopping = tracing;
  tracing = OFF;
  await stopping.shutdown();
}
