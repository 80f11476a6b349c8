// Prometheus metrics (GET /metrics, scope metrics:read). Each app has its own Registry, so several apps in
// one process (tests, benchmarks) never clash; process and runtime metrics (process_*, nodejs_*) describe the
// process, so they live in one process-wide registry that every app's scrape appends.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry, type MetricObjectWithValues, type MetricValue } from 'prom-client';
import type { Contract } from '../http/contract.js';
import type { Observer } from '../observations/observations.js';
import type { Store } from '../storage/store.js';
import type { AttemptOutcome } from '../webhooks/delivery.js';
import { RequestSeries } from './request-series.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The metrics label of a route that is not an operation of the OpenAPI document. */
    operation?: string;
  }
}

/** Prometheus text exposition format 0.0.4. */
export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

const PREFIX = 'plant_store_';

let processRegistry: Registry | undefined;

/** The published label of each attempt outcome (webhook_delivery_attempts_total). */
const DELIVERY_LABELS: Record<AttemptOutcome['status'], string> = {
  succeeded: 'succeeded',
  pending: 'retrying',
  failed: 'failed',
  'disable-subscription': 'subscription_disabled',
};

/** The process-wide registry of default metrics, made on first use (its collectors live as long as the process). */
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

export interface MetricsLogger {
  warn(obj: object, msg: string): void;
}

export interface Metrics {
  readonly registry: Registry;
  /** For the onResponse hook: counts and times one request under its operationId. */
  observeRequest(request: FastifyRequest, reply: FastifyReply): void;
  /** The same for an answer given outside Fastify's hooks (plants/read-lane.ts). */
  observeAnswer(operation: string, status: number, seconds: number): void;
  /** Counts what the services report (observations/observations.ts): commits, plant changes, deliveries, auth failures. */
  readonly observe: Observer;
  /** The exposition text: this app's metrics, then the process's. */
  scrape(): Promise<string>;
  /** The same as data, for a multi-process server to add up (process/primary.ts). */
  json(): Promise<MetricObjectWithValues<MetricValue<string>>[]>;
}

/**
 * `contract` names the request series by operationId; a process that serves no HTTP (a shared writer's
 * primary) has none. `eventsWaiting` counts the feed's waiting readers, where this process has some.
 */
export function createMetrics(options: { contract?: Contract; store: Store; logger?: MetricsLogger; eventsWaiting?: () => number; countsWaiting?: () => number }): Metrics {
  const { contract, store, logger, eventsWaiting, countsWaiting } = options;
  const registry = new Registry();

  // Route (method + Fastify url) -> operationId; HEAD answers a GET route.
  const operations = new Map<string, string>();
  for (const op of contract?.operations ?? []) {
    operations.set(`${op.method} ${op.url}`, op.operationId);
    if (op.method === 'GET') operations.set(`HEAD ${op.url}`, op.operationId);
  }
  const operationOf = (request: FastifyRequest): string => {
    // Read once: Fastify builds this object on every read.
    const { url, config } = request.routeOptions;
    // No route (404): a bounded label, never the raw URL.
    if (url === undefined) return 'unmatched';
    // Routes outside the document (the 405 answers, the docs page) name their label in their config.
    return operations.get(`${request.method} ${url}`) ?? config.operation ?? 'other';
  };

  const requests = new RequestSeries([0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]);
  requests.register(
    registry,
    { name: `${PREFIX}http_requests_total`, help: 'HTTP requests answered, by OpenAPI operationId and status code.' },
    { name: `${PREFIX}http_request_duration_seconds`, help: 'Time from receiving a request to finishing its response, by OpenAPI operationId.' },
  );
  const batchSize = new Histogram({
    name: `${PREFIX}commit_batch_size`,
    help: 'Plant writes per group commit (one transaction, one fsync).',
    buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048],
    registers: [registry],
  });
  const commitLatency = new Histogram({
    name: `${PREFIX}commit_duration_seconds`,
    help: 'Duration of one group commit, fsync included.',
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  const commitFailures = new Counter({
    name: `${PREFIX}commit_failures_total`,
    help: 'Group commits that failed (every write in them was answered 503).',
    registers: [registry],
  });
  const deliveries = new Counter({
    name: `${PREFIX}webhook_delivery_attempts_total`,
    help: 'Recorded webhook delivery attempts by outcome: succeeded, retrying, failed (last retry), subscription_disabled (410 Gone).',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const secretErrors = new Counter({
    name: `${PREFIX}webhook_secret_errors_total`,
    help: 'Webhook deliveries not sent because their signing secret does not open with WEBHOOK_SECRET_KEYS (each is recorded as a failed attempt and retried).',
    registers: [registry],
  });
  const changes = new Counter({
    name: `${PREFIX}plant_changes_total`,
    help: 'Plant changes committed, by the event that announces them: newPlant, plantUpdated, plantDeleted (replays and writes that change nothing are not changes).',
    labelNames: ['event'] as const,
    registers: [registry],
  });
  const authFailures = new Counter({
    name: `${PREFIX}auth_failures_total`,
    help: 'Requests refused by bearer authentication, by reason.',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  // Read from the store, so every process of a multi-process server reads the same value: the sum would multiply it.
  new Gauge({
    name: `${PREFIX}webhook_outbox_pending`,
    help: 'Webhook deliveries pending (not yet delivered, failed or cancelled), read at scrape time.',
    registers: [registry],
    aggregator: 'max',
    async collect() {
      try {
        this.set(await store.webhooks.countPendingDeliveries());
      } catch (err) {
        // A store that does not answer leaves the gauge out of this scrape rather than failing it.
        this.reset();
        logger?.warn({ err }, 'metrics: could not count pending webhook deliveries');
      }
    },
  });

  // Read at scrape time; a store that does not answer leaves them out of the scrape.
  const backlogGauge = (name: string, help: string, pick: (b: { unplaced: number; behind: number }) => number) =>
    new Gauge({
      name: `${PREFIX}${name}`,
      help,
      registers: [registry],
      aggregator: 'max',
      async collect() {
        try {
          this.set(pick(await store.events.backlog()));
        } catch (err) {
          this.reset();
          logger?.warn({ err }, 'metrics: could not read the event log backlog');
        }
      },
    });
  backlogGauge('events_unplaced', 'Events committed and not yet given their place in the feed (moments, normally), read at scrape time.', (b) => b.unplaced);
  backlogGauge(
    'webhook_events_behind',
    'Event log positions the active webhook subscription furthest behind has still to go (its receiver is slow, down, or full), read at scrape time.',
    (b) => b.behind,
  );

  // This process's own count: a multi-process server adds its workers' up (each has its own places).
  if (eventsWaiting) {
    new Gauge({
      name: `${PREFIX}events_waiting`,
      help: 'GET /events requests waiting (wait=) for an event now, read at scrape time.',
      registers: [registry],
      collect() {
        this.set(eventsWaiting());
      },
    });
  }
  if (countsWaiting) {
    new Gauge({
      name: `${PREFIX}counts_waiting`,
      help: 'GET /plants requests with Prefer: count=exact waiting for the count lane now (the running count aside), read at scrape time.',
      registers: [registry],
      collect() {
        this.set(countsWaiting());
      },
    });
  }

  return {
    registry,
    observeRequest(request, reply) {
      requests.observe(operationOf(request), reply.statusCode, reply.elapsedTime / 1_000);
    },
    observeAnswer(operation, status, seconds) {
      requests.observe(operation, status, seconds);
    },
    observe(o) {
      switch (o.kind) {
        case 'commit':
          if (!o.ok) commitFailures.inc();
          else {
            batchSize.observe(o.size);
            commitLatency.observe(o.seconds);
          }
          return;
        case 'plant-change':
          changes.inc({ event: o.event });
          return;
        case 'delivery-attempt':
          deliveries.inc({ outcome: DELIVERY_LABELS[o.outcome.status] });
          return;
        case 'delivery-secret-error':
          secretErrors.inc();
          return;
        case 'auth-failure':
          authFailures.inc({ reason: o.reason });
          return;
      }
    },
    async scrape() {
      const own = await registry.metrics();
      const proc = await processMetrics().metrics();
      return own.endsWith('\n') || own === '' ? own + proc : `${own}\n${proc}`;
    },
    async json() {
      return [...(await registry.getMetricsAsJSON()), ...(await processMetrics().getMetricsAsJSON())];
    },
  };
}

/** The getMetrics operation, answered with `scrape` (this app's metrics, or the whole multi-process server's). */
export function metricsHandlers(scrape: () => Promise<string>) {
  return {
    async getMetrics(_request: FastifyRequest, reply: FastifyReply) {
      const text = await scrape();
      reply.header('content-type', METRICS_CONTENT_TYPE).header('cache-control', 'no-store');
      return text;
    },
  };
}
