// Fixed-window counters per key (a token id, a client address), in process memory with a cap on keys,
// so a flood of distinct keys cannot grow memory without bound.
import { systemClock, type Clock } from '../kit/clock.js';

/** Where a key stands in its current window. */
export interface WindowState {
  /** The quota of one window. */
  limit: number;
  /** Window length in seconds. */
  windowS: number;
  /** What is left of the quota in the current window (0 when exhausted). */
  remaining: number;
  /** Seconds until the window ends and the quota is whole again (at least 1). */
  resetS: number;
}

export interface FixedWindowLimiter {
  /** Counts one unit against `key`; `allowed` is false when the window's quota was already used. */
  hit(key: string): WindowState & { allowed: boolean };
  /** The state of `key` without counting. */
  peek(key: string): WindowState;
}

export function createFixedWindowLimiter(options: {
  limit: number;
  windowMs: number;
  maxKeys?: number;
  clock?: Clock;
}): FixedWindowLimiter {
  const { limit, windowMs, maxKeys = 10_000, clock = systemClock } = options;
  const windows = new Map<string, { start: number; count: number }>();
  const windowS = Math.ceil(windowMs / 1000);

  function current(key: string, t: number) {
    const w = windows.get(key);
    if (w && t - w.start < windowMs) return w;
    if (w) windows.delete(key);
    return undefined;
  }

  function state(count: number, start: number, t: number): WindowState {
    return { limit, windowS, remaining: Math.max(0, limit - count), resetS: Math.max(1, Math.ceil((start + windowMs - t) / 1000)) };
  }

  return {
    hit(key) {
      const t = clock.now();
      let w = current(key, t);
      if (!w) {
        // Oldest window out first: a key that falls out merely starts afresh, which errs on the lenient side.
        if (windows.size >= maxKeys) windows.delete(windows.keys().next().value as string);
        w = { start: t, count: 0 };
        windows.set(key, w);
      }
      const allowed = w.count < limit;
      if (allowed) w.count++;
      const result = state(w.count, w.start, t) as WindowState & { allowed: boolean };
      result.allowed = allowed;
      return result;
    },
    peek(key) {
      const t = clock.now();
      const w = current(key, t);
      return w ? state(w.count, w.start, t) : { limit, windowS, remaining: limit, resetS: windowS };
    },
  };
}

/**
 * The IETF RateLimit fields (draft-ietf-httpapi-ratelimit-headers-10/11, Structured Fields): the policy
 * `"name";q=<quota>;w=<window s>` and the live state `"name";r=<remaining>;t=<s until reset>`.
 */
export function rateLimitHeaders(policy: string, s: WindowState): Record<string, string> {
  return {
    'ratelimit-policy': policyField(policy, s.limit, s.windowS),
    ratelimit: `"${policy}";r=${s.remaining};t=${s.resetS}`,
  };
}

/**
 * The policy field, the same text for every answer under one policy: made once and reused rather than made
 * per answer, where at a few hundred connections each copy lived long enough to reach V8's old generation.
 */
const policies = new Map<string, { limit: number; windowS: number; text: string }>();
function policyField(policy: string, limit: number, windowS: number): string {
  const known = policies.get(policy);
  if (known && known.limit === limit && known.windowS === windowS) return known.text;
  const text = `"${policy}";q=${limit};w=${windowS}`;
  policies.set(policy, { limit, windowS, text });
  return text;
}
