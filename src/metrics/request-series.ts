// The request counter and latency histogram, kept as plain numbers on the request path and turned into
// Prometheus series only when scraped. prom-client's labelled children copy, validate and hash their label
// values on every observation; here a request costs a map lookup by operation and a few increments.
import type { MetricValue, Registry } from 'prom-client';

interface OperationSeries {
  /** Requests by status code. */
  statuses: Map<number, number>;
  /** Requests per bucket, not cumulative: index i counts durations in (bounds[i-1], bounds[i]]; the last is +Inf. */
  buckets: number[];
  sum: number;
  count: number;
}

interface Described {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  aggregator: 'sum';
}

/**
 * What a prom-client Registry reads from a metric, as its own Counter and Histogram give it (Metric.get() at
 * scrape time, reset()); the package's typings name a numeric MetricType the runtime never uses.
 */
interface ScrapedMetric extends Described {
  get(): Promise<Described & { values: MetricValue<string>[] }>;
  reset(): void;
}

export class RequestSeries {
  private readonly byOperation = new Map<string, OperationSeries>();

  constructor(private readonly bounds: readonly number[]) {}

  observe(operation: string, status: number, seconds: number): void {
    let series = this.byOperation.get(operation);
    if (!series) {
      series = { statuses: new Map(), buckets: new Array<number>(this.bounds.length + 1).fill(0), sum: 0, count: 0 };
      this.byOperation.set(operation, series);
    }
    series.statuses.set(status, (series.statuses.get(status) ?? 0) + 1);
    let i = 0;
    while (i < this.bounds.length && seconds > this.bounds[i]!) i++;
    series.buckets[i]!++;
    series.sum += seconds;
    series.count++;
  }

  /** Registers the counter (requests by operation and status) and the histogram (durations by operation). */
  register(registry: Registry, counter: { name: string; help: string }, histogram: { name: string; help: string }): void {
    const reset = () => this.byOperation.clear();
    const described = (d: Described, values: () => MetricValue<string>[]): ScrapedMetric => ({ ...d, get: async () => ({ ...d, values: values() }), reset });
    registry.registerMetric(described({ ...counter, type: 'counter', aggregator: 'sum' }, () => this.counts()) as never);
    registry.registerMetric(described({ ...histogram, type: 'histogram', aggregator: 'sum' }, () => this.histogramValues(histogram.name)) as never);
  }

  private counts(): MetricValue<string>[] {
    const values: MetricValue<string>[] = [];
    for (const [operation, series] of this.byOperation) {
      for (const [status, n] of series.statuses) values.push({ labels: { operation, status: String(status) }, value: n });
    }
    return values;
  }

  private histogramValues(name: string): MetricValue<string>[] {
    const values: (MetricValue<string> & { metricName: string })[] = [];
    for (const [operation, series] of this.byOperation) {
      let cumulative = 0;
      for (let i = 0; i <= this.bounds.length; i++) {
        cumulative += series.buckets[i]!;
        values.push({ metricName: `${name}_bucket`, labels: { le: i < this.bounds.length ? this.bounds[i]! : '+Inf', operation }, value: cumulative });
      }
      values.push({ metricName: `${name}_sum`, labels: { operation }, value: series.sum });
      values.push({ metricName: `${name}_count`, labels: { operation }, value: series.count });
    }
    return values;
  }
}
