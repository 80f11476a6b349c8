// Slows token guessing: each client address may fail authentication a bounded number of times per window.
import { createFixedWindowLimiter, rateLimitHeaders } from '../limits/fixed-window.js';

export interface FailureThrottle {
  /** Seconds until the address may try again, or 0 when it may try now. */
  blockedFor(address: string): number;
  recordFailure(address: string): void;
  /** The RateLimit-Policy and RateLimit fields for the address (policy "auth-failures"). */
  headers(address: string): Record<string, string>;
}

export function createFailureThrottle(limit: number, windowMs = 60_000, maxAddresses = 10_000): FailureThrottle {
  const failures = createFixedWindowLimiter({ limit, windowMs, maxKeys: maxAddresses });
  return {
    blockedFor(address) {
      const s = failures.peek(address);
      return s.remaining > 0 ? 0 : s.resetS;
    },
    recordFailure(address) {
      failures.hit(address);
    },
    headers(address) {
      return rateLimitHeaders('auth-failures', failures.peek(address));
    },
  };
}
