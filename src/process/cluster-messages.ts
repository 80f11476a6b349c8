// What the primary process and its HTTP workers ask of each other over the cluster IPC channel (kit/channel.ts;
// v8 serialization, so bigints cross as they are): each side's method table.
import type { MetricObjectWithValues, MetricValue } from 'prom-client';
import type { WireCommand, WireReply } from '../storage/writer-wire.js';
import type { CountedFailure } from '../auth/failure-throttle.js';
import type { TokenCounts, TokenHits } from '../limits/shared-limits.js';

export type MetricsJson = MetricObjectWithValues<MetricValue<string>>[];

/** What the primary answers a worker. */
export type PrimaryMethods = {
  /** Runs this write command (shared-writer engines only): any of the engine's, in its own codec; the writer's reply as it made it (a failure included). */
  commit(command: WireCommand): WireReply;
  /** This worker listens on `port` (its own SO_REUSEPORT socket, which Node's cluster does not report). Sent with no reply. */
  listening(port: number): void;
  /** Deliveries may be due now (a retry was asked for): wake the dispatcher. Sent with no reply. */
  wakeDispatcher(): void;
  /** GET /metrics: the whole server's metrics, as Prometheus text. */
  scrape(): string;
  // The limits' counts; null only on the worker's side, when no answer came in time and it counts alone.
  /** Counts a failed authentication of this key (a client address) for the whole server. */
  countFailure(key: string): CountedFailure | null;
  /** The requests per token this worker admitted since its last report; each reported token's count in its window, every worker's requests included. */
  addHits(hits: TokenHits): TokenCounts | null;
};

/** What a worker answers the primary. */
export type WorkerMethods = {
  /** This worker's metrics; null when it could not collect them. */
  collect(): MetricsJson | null;
  /** Events were given feed positions: wake the feed's waiting readers. Sent with no reply. */
  placed(): void;
  /** A new server takes over: finish what this worker has, serving (not refusing) what arrives meanwhile, and exit. Sent with no reply. */
  handOver(): void;
};
