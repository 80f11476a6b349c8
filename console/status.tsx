// Status: what is running (GET /status: version, uptime, workers, the store, each replica's state and lag) and
// live charts drawn from two scrapes of GET /metrics at a time: requests per second by status class, p50 and p99
// latency, commits per second and writes per commit, deliveries waiting, and each replica's lag.
import { useEffect, useState } from 'preact/hooks';
import type { operations } from '@plant-store/client';
import { TimeChart } from './chart.js';
import { buckets, parseMetrics, quantileBetween, total, type Sample } from './prometheus.js';
import { messageOf } from './session.js';
import type { ViewProps } from './view.js';
import { NotAllowed } from './parts.js';

type Status = operations['getStatus']['responses'][200]['content']['application/json'];

/** How often the view asks, and how much it keeps: 5 minutes. */
const EVERY_MS = 2_000;
const KEEP = 150;
const CLASSES = ['2xx', '3xx', '4xx', '5xx'] as const;
const COLORS = { '2xx': '#2e7d32', '3xx': '#1565c0', '4xx': '#ef6c00', '5xx': '#c62828' };

interface Point {
  /** Seconds since 1970. */
  at: number;
  perClass: Record<(typeof CLASSES)[number], number>;
  p50?: number;
  p99?: number;
  commits: number;
  writesPerCommit?: number;
  waiting?: number;
  lag: Record<string, number>;
}

interface Scrape {
  at: number;
  samples: Map<string, Sample[]>;
}

/** The point between two scrapes: rates over the time between them, gauges as the later one read them. */
function pointBetween(a: Scrape, b: Scrape): Point {
  const seconds = Math.max(0.001, b.at - a.at);
  const rate = (name: string, keep?: (l: Record<string, string>) => boolean) => Math.max(0, total(b.samples, name, keep) - total(a.samples, name, keep)) / seconds;
  const perClass = Object.fromEntries(CLASSES.map((c) => [c, rate('plant_store_http_requests_total', (l) => l.status?.[0] === c[0])])) as Point['perClass'];
  const latency = [buckets(a.samples, 'plant_store_http_request_duration_seconds'), buckets(b.samples, 'plant_store_http_request_duration_seconds')] as const;
  const commits = rate('plant_store_commit_batch_size_count');
  const writes = rate('plant_store_commit_batch_size_sum');
  const pending = b.samples.get('plant_store_webhook_outbox_pending');
  const lag = Object.fromEntries((b.samples.get('plant_store_replication_lag_seconds') ?? []).map((s) => [s.labels.replica ?? '', s.value]));
  const ms = (v: number | undefined) => (v === undefined ? undefined : v * 1_000);
  return {
    at: b.at,
    perClass,
    p50: ms(quantileBetween(latency[0], latency[1], 0.5)),
    p99: ms(quantileBetween(latency[0], latency[1], 0.99)),
    commits,
    writesPerCommit: commits > 0 ? writes / commits : undefined,
    waiting: pending?.[0]?.value,
    lag,
  };
}

function bytes(n: number): string {
  const units = ['bytes', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) (n /= 1024), i++;
  return `${i === 0 ? n : n.toFixed(1)} ${units[i]}`;
}

function duration(seconds: number): string {
  const d = Math.floor(seconds / 86_400);
  const h = Math.floor((seconds % 86_400) / 3_600);
  const m = Math.floor((seconds % 3_600) / 60);
  return d > 0 ? `${d} d ${h} h` : h > 0 ? `${h} h ${m} min` : m > 0 ? `${m} min ${Math.floor(seconds % 60)} s` : `${Math.floor(seconds)} s`;
}

const round = (v: number) => (v >= 100 ? Math.round(v) : Math.round(v * 10) / 10);

export function StatusView({ client, can }: ViewProps) {
  const [status, setStatus] = useState<Status>();
  const [points, setPoints] = useState<Point[]>([]);
  const [problem, setProblem] = useState<string>();
  const allowed = can('metrics:read');

  useEffect(() => {
    if (!allowed) return;
    let last: Scrape | undefined;
    let stopped = false;
    async function look() {
      const [facts, metrics] = await Promise.all([client.GET('/status'), client.GET('/metrics', { parseAs: 'text' })]);
      if (stopped) return;
      if (!facts.data) return setProblem(messageOf(facts.error, facts.response));
      if (typeof metrics.data !== 'string') return setProblem(messageOf(metrics.error, metrics.response));
      setProblem(undefined);
      setStatus(facts.data);
      const now: Scrape = { at: Date.now() / 1_000, samples: parseMetrics(metrics.data) };
      if (last) {
        const point = pointBetween(last, now);
        setPoints((p) => [...p.slice(-(KEEP - 1)), point]);
      }
      last = now;
    }
    const tick = () => void look().catch((err: unknown) => !stopped && setProblem(messageOf(err)));
    tick();
    const timer = setInterval(tick, EVERY_MS);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, [client, allowed]);

  if (!allowed) {
    return <NotAllowed title="Status">This token may not read the service's status: that needs the scope metrics:read.</NotAllowed>;
  }
  const times = points.map((p) => p.at);
  const replicas = status?.replicas ?? [];
  return (
    <main>
      <h1>Status</h1>
      {problem && <p role="alert">{problem}</p>}
      {status && (
        <dl class="facts" aria-label="Service">
          <dt>Version</dt>
          <dd>{status.version}</dd>
          <dt>Up for</dt>
          <dd>
            {duration(status.uptimeSeconds)} (since {new Date(status.startedAt).toLocaleString()})
          </dd>
          <dt>Workers</dt>
          <dd>{status.workers}</dd>
          <dt>Store</dt>
          <dd>
            {status.store.engine === 'sqlite' ? 'SQLite' : 'PostgreSQL'}
            {status.store.sizeBytes !== undefined && `, ${bytes(status.store.sizeBytes)}`}
          </dd>
        </dl>
      )}
      {status && (
        <section aria-labelledby="replicas">
          <h2 id="replicas">Replication</h2>
          {replicas.length === 0 ? (
            <p>No replica: REPLICA_URL names none{status.store.engine === 'postgres' ? ' (on PostgreSQL, a standby replicates the store)' : ''}.</p>
          ) : (
            <table>
              <thead>
                <tr>
                  <th scope="col">Replica</th>
                  <th scope="col">State</th>
                  <th scope="col">Lag</th>
                  <th scope="col">Last sync</th>
                </tr>
              </thead>
              <tbody>
                {replicas.map((r) => (
                  <tr key={r.name}>
                    <td>{r.name}</td>
                    <td>{r.state}</td>
                    <td>{r.lagSeconds.toFixed(1)} s</td>
                    <td>{r.lastSyncAt ? new Date(r.lastSyncAt).toLocaleTimeString() : 'not yet'}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </section>
      )}
      <section aria-labelledby="charts" class="charts">
        <h2 id="charts">The last 5 minutes</h2>
        <p class="hint">Drawn every 2 seconds from GET /metrics, over the whole instance.</p>
        <TimeChart title="Requests per second" times={times} series={CLASSES.map((c) => ({ label: c, color: COLORS[c], values: points.map((p) => p.perClass[c]), format: (v) => `${round(v)}/s` }))} />
        <TimeChart
          title="Latency"
          times={times}
          series={[
            { label: 'p50', color: '#1565c0', values: points.map((p) => p.p50 ?? null), format: (v) => `${round(v)} ms` },
            { label: 'p99', color: '#c62828', values: points.map((p) => p.p99 ?? null), format: (v) => `${round(v)} ms` },
          ]}
        />
        <TimeChart
          title="Commits"
          times={times}
          series={[
            { label: 'commits per second', color: '#2e7d32', values: points.map((p) => p.commits), format: (v) => `${round(v)}/s` },
            { label: 'writes per commit', color: '#6a1b9a', values: points.map((p) => p.writesPerCommit ?? null), format: (v) => String(round(v)) },
          ]}
        />
        <TimeChart title="Deliveries waiting" times={times} series={[{ label: 'waiting', color: '#ef6c00', values: points.map((p) => p.waiting ?? null), format: (v) => String(Math.round(v)) }]} />
        {replicas.length > 0 && (
          <TimeChart
            title="Replication lag"
            times={times}
            series={replicas.map((r, i) => ({ label: r.name, color: ['#00838f', '#ad1457', '#558b2f', '#4e342e'][i % 4]!, values: points.map((p) => p.lag[r.name] ?? null), format: (v) => `${v.toFixed(1)} s` }))}
          />
        )}
      </section>
    </main>
  );
}
