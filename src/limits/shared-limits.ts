// The failure throttle and the per-token rate limit of a multi-process server (WORKERS > 1), counted in one
// place, the primary, so that each holds for the whole service whatever the number of workers.
//
// Failures are rare: each one is counted in the primary, and its answer decides between 401 and 429.
// Requests are not: a worker admits a token's request on what it knows of the token's count, with no round
// trip, and reports what it admitted in batches (within FLUSH_MS, one report in flight at a time); the
// primary adds the reports up and answers with each token's count and window. A worker may run ahead of what
// the primary confirmed by at most `slack` requests per token; past that, the request waits for the primary's
// next answer. Once the whole service passed the limit, each worker learns it within two answers, so at most
// 2 x WORKERS x slack more are admitted in a window: 1% of the limit, or 2 x WORKERS requests when that is
// more (docs/deployment.md). Refusals are never early: what a worker knows of the count is never above what
// the service admitted (reports that reach the primary just after a window ended count in the next one).
import type { CountedFailure } from '../auth/failure-throttle.js';
import { systemClock, type Clock } from '../kit/clock.js';
import { createFixedWindowLimiter, type WindowState } from './fixed-window.js';
import type { RequestCounter } from './rate-limited-guard.js';

/** A token's requests a worker admitted since its last report. */
export type TokenHits = [key: string, count: number][];
/** A token's count in its current window, and when that window ends (ms since the epoch). */
export type TokenCounts = [key: string, count: number, endsAt: number][];

/** A worker's side of the channel to the primary (process/worker-link.ts); null when no answer came. */
export interface LimitsChannel {
  countFailure(key: string): Promise<CountedFailure | null>;
  reportHits(hits: TokenHits): Promise<TokenCounts | null>;
}

/**
 * How long a worker's admissions wait to be reported: each report costs both processes a message, and few
 * tokens are near their limit. A token half-way through its slack, or a request waiting on it, sends one at once.
 */
const FLUSH_MS = 100;
const MAX_KEYS = 10_000;

/** The primary's counts: what every worker asks and reports. */
export function createLimitKeeper(options: {
  authFailuresPerMinute: number;
  rateLimitPerToken: number;
  rateLimitWindowS: number;
  clock?: Clock;
}) {
  const clock = options.clock ?? systemClock;
  const failures = createFixedWindowLimiter({ limit: options.authFailuresPerMinute, windowMs: 60_000, clock });
  const windowMs = options.rateLimitWindowS * 1000;
  const tokens = new Map<string, { start: number; count: number }>();
  return {
    countFailure(key: string): CountedFailure {
      return failures.hit(key);
    },
    addHits(hits: TokenHits): TokenCounts {
      const t = clock.now();
      return hits.map(([key, n]) => {
        let w = tokens.get(key);
        if (!w || t - w.start >= windowMs) {
          if (w) tokens.delete(key);
          // Oldest window out first: a key that falls out merely starts afresh (lenient, as fixed-window.ts).
          else if (tokens.size >= MAX_KEYS) tokens.delete(tokens.keys().next().value as string);
          w = { start: t, count: 0 };
          tokens.set(key, w);
        }
        w.count += n;
        return [key, w.count, w.start + windowMs];
      });
    },
  };
}

/** A worker's failure counter: the primary's answer, or this worker's own count when none comes. */
export function createSharedFailureCounter(channel: LimitsChannel, limit: number, clock: Clock = systemClock) {
  const local = createFixedWindowLimiter({ limit, windowMs: 60_000, clock });
  return {
    async hit(key: string): Promise<CountedFailure> {
      return (await channel.countFailure(key)) ?? local.hit(key);
    },
  };
}

type Counted = WindowState & { allowed: boolean };

interface TokenEntry {
  /** The window's count as the primary last answered, this worker's reported requests included. */
  known: number;
  /** When the primary's window ends; 0 before its first answer. */
  endsAt: number;
  /** Admitted and reported, not yet answered. */
  sent: number;
  /** Admitted since the last report. */
  unsent: number;
}

/** `slack`: the requests per token a worker may admit beyond what the primary has confirmed. */
export function slackFor(limit: number, workers: number): number {
  return Math.max(1, Math.floor(limit / (200 * workers)));
}

/** A worker's per-token limiter of a multi-process server. */
export function createSharedRequestCounter(options: {
  channel: LimitsChannel;
  limit: number;
  windowS: number;
  workers: number;
  clock?: Clock;
}): RequestCounter {
  const { channel, limit, windowS } = options;
  const clock = options.clock ?? systemClock;
  const slack = slackFor(limit, options.workers);
  const entries = new Map<string, TokenEntry>();
  const unsentKeys = new Set<string>();
  const waiting: (() => void)[] = [];
  let inFlight = false;
  /** A report was asked for at once while one was in flight. */
  let urgent = false;
  let timer: NodeJS.Timeout | undefined;

  function entry(key: string, t: number): TokenEntry {
    let e = entries.get(key);
    if (!e) {
      if (entries.size >= MAX_KEYS) entries.delete(entries.keys().next().value as string);
      e = { known: 0, endsAt: 0, sent: 0, unsent: 0 };
      entries.set(key, e);
    } else if (e.endsAt !== 0 && t >= e.endsAt) {
      // The window ended: the primary opens the next one with the next report.
      e.known = 0;
      e.endsAt = 0;
    }
    return e;
  }

  function flush(): void {
    if (timer) {
      clearTimeout(timer);
      timer = undefined;
    }
    if (inFlight || unsentKeys.size === 0) return;
    const hits: TokenHits = [];
    for (const key of unsentKeys) {
      const e = entries.get(key);
      if (!e || e.unsent === 0) continue;
      hits.push([key, e.unsent]);
      e.sent += e.unsent;
      e.unsent = 0;
    }
    unsentKeys.clear();
    if (hits.length === 0) return;
    inFlight = true;
    void channel.reportHits(hits).then((counts) => {
      inFlight = false;
      if (counts) {
        for (const [key, count, endsAt] of counts) {
          const e = entries.get(key);
          if (!e) continue;
          e.known = count;
          e.endsAt = endsAt;
          e.sent = 0;
        }
      } else {
        // No answer (the primary is gone or stuck): keep counting what this worker admitted.
        for (const [key] of hits) {
          const e = entries.get(key);
          if (!e) continue;
          e.known += e.sent;
          e.sent = 0;
        }
      }
      const again = urgent;
      urgent = false;
      // Each re-counts; one still past its slack waits again and sends the next report at once.
      for (const wake of waiting.splice(0)) wake();
      if (unsentKeys.size > 0) schedule(again);
    });
  }

  /** A report at once (`now`) or within FLUSH_MS; one in flight is followed by the next when it is answered. */
  function schedule(now: boolean): void {
    if (inFlight) {
      if (now) urgent = true;
      return;
    }
    if (now) return flush();
    if (timer) return;
    timer = setTimeout(flush, FLUSH_MS);
    timer.unref();
  }

  function state(e: TokenEntry, t: number, allowed: boolean): Counted {
    const used = e.known + e.sent + e.unsent;
    const resetS = e.endsAt === 0 ? windowS : Math.max(1, Math.ceil((e.endsAt - t) / 1000));
    return { allowed, limit, windowS, remaining: Math.max(0, limit - used), resetS };
  }

  function hit(key: string): Counted | Promise<Counted> {
    const t = clock.now();
    const e = entry(key, t);
    if (e.known + e.sent + e.unsent >= limit) return state(e, t, false);
    if (e.sent + e.unsent >= slack) {
      // Ahead of the primary by the whole slack: wait for its answer (a token sending faster than one
      // round trip per slack, or a worker that has not heard of the token's window yet).
      return new Promise<Counted>((resolve) => {
        waiting.push(() => resolve(hit(key)));
        schedule(true);
      });
    }
    // Once per key and report: a second hash lookup on every request costs more.
    if (e.unsent++ === 0) unsentKeys.add(key);
    schedule(2 * (e.sent + e.unsent) >= slack);
    return state(e, t, true);
  }

  return { hit };
}
