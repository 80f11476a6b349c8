// An HTTP worker's side of the IPC channel to the primary (process/primary.ts): every write goes there as a
// command for the one writer (shared-writer engines; a transport of storage/writer-wire.ts), its feed readers
// hear there of placed events, its GET /metrics answers with the whole server's metrics gathered there, a retry
// asked of it wakes the primary's dispatcher, and its rate limits count there. Nothing it hears from the primary
// makes it send anything back but answers.
import type { SharedWriter } from '../storage/store.js';
import { StoreUnavailableError } from '../errors/store-errors.js';
import type { WireReply } from '../storage/writer-wire.js';
import type { CountedFailure } from '../auth/failure-throttle.js';
import type { LimitsChannel, TokenCounts } from '../limits/shared-limits.js';
import { isMessage, type MetricsJson, type PrimaryMessage, type WorkerMessage } from './cluster-messages.js';
import { PendingReplies } from '../kit/replies.js';

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
}

type Channel = Pick<NodeJS.Process, 'on' | 'send' | 'connected'>;

const UNANSWERED = 'the primary process did not return the metrics';

/** A scrape the primary could not answer, or did not in time. */
function unanswered(): never {
  throw new Error(UNANSWERED);
}

export function createWorkerLink(channel: Channel = process): WorkerLink {
  const commits = new PendingReplies<WireReply>();
  const scrapes = new PendingReplies<string>();
  const limitAnswers = new PendingReplies<CountedFailure | TokenCounts | null>();
  const placed = new Set<() => void>();
  let collect: (() => Promise<MetricsJson>) | undefined;
  let wakeTimer: NodeJS.Timeout | undefined;
  let wakeAgain = false;
  // No 'disconnect' handling: when the primary is gone, Node's cluster ends the worker at once. Its clients see
  // their connections close; nothing they were answered is lost, since a 200 follows the primary's commit.
  /** False only when the message cannot go; send()'s own false means queued behind others, and it still goes. */
  const send = (msg: WorkerMessage): boolean => {
    if (!channel.connected) return false;
    try {
      channel.send!(msg);
      return true;
    } catch {
      return false;
    }
  };

  channel.on('message', (msg: unknown) => {
    if (!isMessage<PrimaryMessage>(msg)) return;
    switch (msg.plantStore) {
      case 'committed':
        commits.answer(msg.id, msg.reply);
        return;
      case 'placed':
        for (const listener of placed) listener();
        return;
      case 'collect': {
        const reply = (metrics: MetricsJson | null) => send({ plantStore: 'collected', id: msg.id, metrics });
        // Not serving yet: nothing counted.
        if (!collect) return void reply([]);
        collect().then(reply, () => reply(null));
        return;
      }
      case 'scraped':
        if (msg.text === null) scrapes.fail(msg.id, new Error(UNANSWERED));
        else scrapes.answer(msg.id, msg.text);
        return;
      case 'auth-failure-counted':
        limitAnswers.answer(msg.id, msg.counted);
        return;
      case 'token-counts':
        limitAnswers.answer(msg.id, msg.counts);
        return;
    }
  });
  /** One question about the limits; null when it cannot go or no answer comes in time. */
  const askLimits = <T extends CountedFailure | TokenCounts>(msg: (id: number) => WorkerMessage): Promise<T | null> =>
    limitAnswers.ask((id) => send(msg(id)), { timeoutMs: LIMITS_TIMEOUT_MS, fallback: () => null }) as Promise<T | null>;
  return {
    writer: {
      send(command) {
        return commits.ask((id) => send({ plantStore: 'commit', id, command }), {
          fallback: () => {
            throw new StoreUnavailableError(new Error('the primary process is gone'));
          },
        });
      },
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
      send({ plantStore: 'wake-dispatcher' });
      const gap = () => {
        wakeTimer = undefined;
        if (!wakeAgain) return;
        wakeAgain = false;
        send({ plantStore: 'wake-dispatcher' });
        wakeTimer = setTimeout(gap, WAKE_GAP_MS);
        wakeTimer.unref();
      };
      wakeTimer = setTimeout(gap, WAKE_GAP_MS);
      wakeTimer.unref();
    },
    scrape() {
      return scrapes.ask((id) => send({ plantStore: 'scrape', id }), { timeoutMs: SCRAPE_TIMEOUT_MS, fallback: unanswered });
    },
    collectWith(fn) {
      collect = fn;
    },
    limits: {
      countFailure: (key) => askLimits<CountedFailure>((id) => ({ plantStore: 'auth-failure', id, key })),
      reportHits: (hits) => askLimits<TokenCounts>((id) => ({ plantStore: 'token-hits', id, hits })),
    },
  };
}
