// Slows token guessing: each client address may fail authentication a bounded number of times per window.
// The counter is passed in (limits/ makes it) rather than imported, so auth/ never imports limits/.

/** Counts per key over fixed windows; limits/fixed-window.ts's limiter is one. */
export interface AttemptCounter {
  hit(key: string): unknown;
  /** What is left of the key's quota and the seconds until its window ends. */
  peek(key: string): { remaining: number; resetS: number };
}

export interface FailureThrottle {
  /** Seconds until the address may try again, or 0 when it may try now. */
  blockedFor(address: string): number;
  recordFailure(address: string): void;
}

export function createFailureThrottle(failures: AttemptCounter): FailureThrottle {
  return {
    blockedFor(address) {
      const s = failures.peek(address);
      return s.remaining > 0 ? 0 : s.resetS;
    },
    recordFailure(address) {
      failures.hit(address);
    },
  };
}
