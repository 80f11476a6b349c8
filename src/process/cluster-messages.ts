// What the primary process and its HTTP workers say to each other over the cluster IPC channel (v8 serialization,
// so bigints cross as they are). Every message carries `plantStore`, which keeps them apart from Node's own.
import type { MetricObjectWithValues, MetricValue } from 'prom-client';
import type { WireCommand, WireReply } from '../storage/writer-wire.js';
import type { CountedFailure } from '../auth/failure-throttle.js';
import type { TokenCounts, TokenHits } from '../limits/shared-limits.js';

export type MetricsJson = MetricObjectWithValues<MetricValue<string>>[];

/** From a worker. */
export type WorkerMessage =
  /** Run this write command (shared-writer engines only): any of the engine's, in its own codec. */
  | { plantStore: 'commit'; id: number; command: WireCommand }
  /** Deliveries may be due now (a retry was asked for): wake the dispatcher. */
  | { plantStore: 'wake-dispatcher' }
  /** GET /metrics: the whole server's metrics, please. */
  | { plantStore: 'scrape'; id: number }
  /** This worker's metrics, as asked by a `collect`. */
  | { plantStore: 'collected'; id: number; metrics: MetricsJson | null }
  /** Count a failed authentication of this key (a client address) for the whole server. */
  | { plantStore: 'auth-failure'; id: number; key: string }
  /** The requests per token this worker admitted since its last report. */
  | { plantStore: 'token-hits'; id: number; hits: TokenHits };

/** From the primary. */
export type PrimaryMessage =
  /** The writer's reply to a command, as it made it (a failure included). */
  | { plantStore: 'committed'; id: number; reply: WireReply }
  /** Events were given feed positions: wake the feed's waiting readers. */
  | { plantStore: 'placed' }
  /** Send me your metrics. */
  | { plantStore: 'collect'; id: number }
  | { plantStore: 'scraped'; id: number; text: string | null }
  | { plantStore: 'auth-failure-counted'; id: number; counted: CountedFailure }
  /** Each reported token's count in its window, every worker's requests included. */
  | { plantStore: 'token-counts'; id: number; counts: TokenCounts };

export function isMessage<T extends { plantStore: string }>(msg: unknown): msg is T {
  return typeof msg === 'object' && msg !== null && typeof (msg as { plantStore?: unknown }).plantStore === 'string';
}
