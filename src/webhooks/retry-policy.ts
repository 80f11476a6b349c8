// What an attempt leads to, as pure functions: success on 2xx, the subscription disabled on 410 or when the
// SSRF guard refuses its address (a setting to fix, not a fault that retries cure), otherwise another try on
// a fixed schedule with jitter (Retry-After on 429/503 waits at least that long), and after the last
// scheduled retry the delivery is marked failed.
import type { AttemptOutcome } from './delivery.js';

const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/** Delays before retry 1..7 (after the first attempt fails). Documented in the OpenAPI `webhooks` section. */
export const RETRY_SCHEDULE_MS: readonly number[] = [5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR];
/** Each delay is scaled by a factor in [1 - JITTER, 1 + JITTER). */
export const JITTER = 0.1;
/** A Retry-After longer than this is capped: a receiver cannot park a delivery for ever. */
export const MAX_RETRY_AFTER_MS = 24 * HOUR;
/** Attempts in one round: the first one and every scheduled retry. */
export const MAX_ATTEMPTS = RETRY_SCHEDULE_MS.length + 1;

export interface AttemptResult {
  /** The receiver's status, or null when no answer came (timeout, connection error, rejected address). */
  statusCode: number | null;
  /** The Retry-After header of the answer, if any. */
  retryAfter?: string | null;
  /** Set when the SSRF guard refused the address; `error` says why, naming WEBHOOK_ALLOWED_HOSTS. */
  refused?: boolean;
  error?: string | null;
}

/**
 * Milliseconds a Retry-After value asks to wait (delta-seconds or an HTTP-date), at least 0 and at most
 * MAX_RETRY_AFTER_MS; undefined when absent or unparseable.
 */
export function parseRetryAfter(value: string | null | undefined, now: Date): number | undefined {
  if (value === null || value === undefined) return undefined;
  const v = value.trim();
  if (v === '') return undefined;
  let ms: number;
  if (/^\d+$/.test(v)) {
    ms = Number(v) * SECOND;
  } else {
    const at = Date.parse(v);
    // Only an HTTP-date (IMF-fixdate or the obsolete forms Date.parse reads); not a bare number with a sign etc.
    if (Number.isNaN(at) || !/[A-Za-z]/.test(v)) return undefined;
    ms = at - now.getTime();
  }
  return Math.min(Math.max(ms, 0), MAX_RETRY_AFTER_MS);
}

/** The delay before retry number `retry` (1-based), jittered with `random` in [0, 1). */
export function retryDelayMs(retry: number, random: () => number = Math.random): number {
  const base = RETRY_SCHEDULE_MS[retry - 1];
  if (base === undefined) throw new RangeError(`there is no retry ${retry}; the schedule has ${RETRY_SCHEDULE_MS.length}`);
  const r = Math.min(Math.max(random(), 0), 1);
  return Math.round(base * (1 + JITTER * (2 * r - 1)));
}

/**
 * The outcome of an attempt. `attemptCount` is the number of attempts made in this round before this one
 * (0 for the first attempt); `now` is when the attempt ended.
 */
export function decideOutcome(
  result: AttemptResult,
  attemptCount: number,
  now: Date,
  random: () => number = Math.random,
): AttemptOutcome {
  const status = result.statusCode;
  if (status !== null && status >= 200 && status <= 299) return { status: 'succeeded' };
  if (status === 410) return { status: 'disable-subscription', reason: `the receiver answered 410 Gone on ${now.toISOString()}` };
  if (result.refused) return { status: 'disable-subscription', reason: `${result.error ?? 'refusing to connect'} (${now.toISOString()})` };
  const retry = attemptCount + 1;
  if (retry > RETRY_SCHEDULE_MS.length) return { status: 'failed' };
  let delay = retryDelayMs(retry, random);
  if (status === 429 || status === 503) {
    const asked = parseRetryAfter(result.retryAfter, now);
    if (asked !== undefined) delay = Math.max(delay, asked);
  }
  return { status: 'pending', nextAttemptAt: new Date(now.getTime() + delay) };
}
