// The pauses of the feed's followers (follow.ts, stream.ts): which answers are worth asking again, the back-off
// with jitter after failures in a row, and Retry-After.

/** How a follower of the feed pauses before asking again (followEvents, streamEvents). */
export interface RetryOptions {
  /**
   * The back-off after requests in a row that failed (or, for followEvents, brought nothing): it starts at
   * `initialMs` (default 1000) and doubles with each, up to `maxMs` (default 30000), each pause drawn at random
   * between half of it and all of it (jitter), so that many followers do not come back in step.
   */
  backoff?: { initialMs?: number; maxMs?: number };
  /** Told before each pause ahead of a retry or reconnect; throw from it to stop following. */
  onRetry?: (info: { status?: number; error?: unknown; delayMs: number }) => void;
  /** Pauses `ms` milliseconds, or less when `signal` aborts (default: a timer). Tests inject their own. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** A number in [0, 1) for the jitter (default Math.random). */
  random?: () => number;
}

/** Answers worth asking again: a limit (429), and an instance or proxy that cannot answer now. */
export const RETRYABLE = new Set([429, 502, 503, 504]);

function timerSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** The pauses of RetryOptions: jitter, the back-off after `n` failures in a row, and a pause onRetry is told of. */
export function retryPauses(options: RetryOptions, signal: AbortSignal | undefined) {
  const sleep = options.sleep ?? timerSleep;
  const random = options.random ?? Math.random;
  const initialMs = options.backoff?.initialMs ?? 1_000;
  const maxMs = Math.max(initialMs, options.backoff?.maxMs ?? 30_000);
  const jitter = (ms: number) => ms / 2 + (random() * ms) / 2;
  return {
    sleep: (ms: number) => sleep(ms, signal),
    jitter,
    backoff: (n: number) => jitter(Math.min(maxMs, initialMs * 2 ** Math.min(n - 1, 30))),
    async pause(delayMs: number, info: { status?: number; error?: unknown }) {
      options.onRetry?.({ ...info, delayMs });
      await sleep(delayMs, signal);
    },
  };
}

/** Retry-After (RFC 9110 10.2.3) in milliseconds from `now`: delay-seconds or an HTTP-date; undefined without one. */
export function retryAfterMs(response: Response, now: number = Date.now()): number | undefined {
  const value = response.headers.get('retry-after')?.trim();
  if (!value) return undefined;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
