// An HTTP worker's side of the IPC channel to the primary (process/primary.ts): every write goes there as a
// command for the one writer (shared-writer engines; a transport of storage/writer-wire.ts), its feed readers
// hear there of placed events, its GET /metrics answers with the whole server's metrics gathered there, a retry
// asked of it wakes the primary's dispatcher, and its rate limits count there. Nothing it hears from the primary
// makes it send anything back but answers.
import type { SharedWriter } from '../storage/store.js';
import { StoreUnavailableError } from '../errors/store-errors.js';
import type { LimitsChannel } from '../limits/shared-limits.js';
import type { MetricsJson, PrimaryMethods, WorkerMethods } from './cluster-messages.js';
import { createChannel, ipcCarrier, type IpcEnd, type Why } from '../kit/channel.js';

/** Least time between two dispatcher wakes sent to the primary (a client asking retries in a loop sends few). */
const WAKE_GAP_MS = 20;
/** How long GET /metrics waits for the primary's answer. */
const SCRAPE_TIMEOUT_MS = 5_000;
/** How long a limit's count waits for the primary before this worker counts alone. */
const LIMITS_TIMEOUT_MS = 1_000;

export interface WorkerLink {
  /** Writes through the primary (shared-writer engines). */
  readonly writer: SharedWriter;
  /** Deliveries may be due now (a retry was asked of this worker): wakes the primary's dispatcher. */
  deliveriesDue(): void;
  /** The whole server's metrics, as Prometheus text. */
  scrape(): Promise<string>;
  /** What this worker answers when the primary collects metrics. */
  collectWith(collect: () => Promise<MetricsJson>): void;
  /** The failure throttle's and the per-token rate limit's counts, kept by the primary (limits/shared-limits.ts). */
  readonly limits: LimitsChannel;
  /** Tells the primary this worker listens on `port`. */
  listening(port: number): void;
  /** Resolves when the primary says a new server takes over. */
  readonly handOverAsked: Promise<void>;
}

const UNANSWERED = 'the primary process did not return the metrics';

/** A scrape the primary could not answer, or did not in time. */
function unanswered(): never {
  throw new Error(UNANSWERED);
}
/** A write the primary did not answer: it could not be sent, or the primary is gone (or failed to take it). */
function primaryGone(why: Why, err: Error): never {
  throw new StoreUnavailableError(why === 'failed' ? err : new Error('the primary process is gone'));
}
/** A limit's count the primary did not give: this worker counts alone. */
const countAlone = () => null;

export function createWorkerLink(ipc: IpcEnd = process): WorkerLink {
  const placed = new Set<() => void>();
  let collect: (() => Promise<MetricsJson>) | undefined;
  let wakeTimer: NodeJS.Timeout | undefined;
  let wakeAgain = false;
  let askHandOver!: () => void;
  const handOverAsked = new Promise<void>((resolve) => (askHandOver = resolve));
  // When the primary is gone, Node's cluster ends the worker at once (the disconnect fails what waits first).
  // Its clients see their connections close; nothing they were answered is lost: a 200 follows the primary's commit.
  const primary = createChannel<PrimaryMethods, WorkerMethods>(ipcCarrier(ipc), {
    handlers: {
      // Not serving yet: nothing counted.
      collect: () => (collect ? collect().catch(() => null) : []),
      placed: () => {
        for (const listener of placed) listener();
      },
      handOver: () => askHandOver(),
    },
    calls: {
      commit: { fallback: primaryGone },
      scrape: { timeoutMs: SCRAPE_TIMEOUT_MS, fallback: unanswered },
      countFailure: { timeoutMs: LIMITS_TIMEOUT_MS, fallback: countAlone },
      addHits: { timeoutMs: LIMITS_TIMEOUT_MS, fallback: countAlone },
    },
  });
  return {
    writer: {
      send: (command) => primary.request('commit', command),
      watch(listener) {
        placed.add(listener);
        return () => placed.delete(listener);
      },
    },
    deliveriesDue() {
      // At most one message per WAKE_GAP_MS: the first at once, and one at the end of the gap for whatever
      // asked during it.
      if (wakeTimer) {
        wakeAgain = true;
        return;
      }
      primary.notify('wakeDispatcher');
      const gap = () => {
        wakeTimer = undefined;
        if (!wakeAgain) return;
        wakeAgain = false;
        primary.notify('wakeDispatcher');
        wakeTimer = setTimeout(gap, WAKE_GAP_MS);
        wakeTimer.unref();
      };
      wakeTimer = setTimeout(gap, WAKE_GAP_MS);
      wakeTimer.unref();
    },
    scrape: () => primary.request('scrape'),
    collectWith(fn) {
      collect = fn;
    },
    limits: {
      countFailure: (key) => primary.request('countFailure', key),
      reportHits: (hits) => primary.request('addHits', hits),
    },
    listening: (port) => primary.notify('listening', port),
    handOverAsked,
  };
}
