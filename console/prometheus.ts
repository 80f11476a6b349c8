// Samples of the Prometheus text format (GET /metrics), and the figures the Status view draws from two scrapes.
// The format is a line per sample, `name{label="value",...} number`; comments start with #. A parser of a few
// lines is enough for the service's own output, and keeps a library out of the console's bundle.

export interface Sample {
  labels: Record<string, string>;
  value: number;
}

/** The samples of each metric name in `text`. */
export function parseMetrics(text: string): Map<string, Sample[]> {
  const out = new Map<string, Sample[]>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    // Label values escape \, " and newline with a backslash.
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    const value = Number(m[3]);
    const list = out.get(m[1]!) ?? [];
    list.push({ labels, value: Number.isNaN(value) && m[3] !== 'NaN' ? 0 : value });
    out.set(m[1]!, list);
  }
  return out;
}

/** The sum of a metric's samples whose labels pass `keep`. */
export function total(samples: Map<string, Sample[]>, name: string, keep: (labels: Record<string, string>) => boolean = () => true): number {
  return (samples.get(name) ?? []).filter((s) => keep(s.labels)).reduce((sum, s) => sum + s.value, 0);
}

/** A histogram's cumulative counts by upper bound, added up over its other labels. */
export function buckets(samples: Map<string, Sample[]>, name: string): Map<number, number> {
  const out = new Map<number, number>();
  for (const s of samples.get(`${name}_bucket`) ?? []) {
    const le = s.labels.le === '+Inf' ? Infinity : Number(s.labels.le);
    out.set(le, (out.get(le) ?? 0) + s.value);
  }
  return out;
}

/**
 * The q-quantile of what a histogram observed between two scrapes, interpolated within its bucket as Prometheus's
 * histogram_quantile does; undefined when nothing was observed. The last finite bound stands for +Inf.
 */
export function quantileBetween(before: Map<number, number>, after: Map<number, number>, q: number): number | undefined {
  const bounds = [...after.keys()].sort((a, b) => a - b);
  const counts = bounds.map((le) => (after.get(le) ?? 0) - (before.get(le) ?? 0));
  const all = counts.at(-1) ?? 0;
  if (all <= 0) return undefined;
  const rank = q * all;
  for (let i = 0; i < bounds.length; i++) {
    if (counts[i]! < rank) continue;
    const upper = bounds[i]!;
    const lower = i === 0 ? 0 : bounds[i - 1]!;
    if (upper === Infinity) return lower;
    const below = i === 0 ? 0 : counts[i - 1]!;
    const inBucket = counts[i]! - below;
    return inBucket <= 0 ? upper : lower + ((upper - lower) * (rank - below)) / inBucket;
  }
  return bounds.at(-2);
}
