// Slows token guessing: each client address may fail authentication a bounded number of times per window.

export interface FailureThrottle {
  /** Seconds until the address may try again, or 0 when it may try now. */
  blockedFor(address: string): number;
  recordFailure(address: string): void;
}

export function createFailureThrottle(limit: number, windowMs = 60_000, maxAddresses = 10_000): FailureThrottle {
  const windows = new Map<string, { start: number; failures: number }>();

  function current(address: string, t: number) {
    const w = windows.get(address);
    if (w && t - w.start < windowMs) return w;
    if (w) windows.delete(address);
    return undefined;
  }

  return {
    blockedFor(address) {
      const t = Date.now();
      const w = current(address, t);
      if (!w || w.failures < limit) return 0;
      return Math.max(1, Math.ceil((w.start + windowMs - t) / 1000));
    },
    recordFailure(address) {
      const t = Date.now();
      const w = current(address, t);
      if (w) {
        w.failures++;
        return;
      }
      // Oldest first out: under a flood of addresses memory stays bounded.
      if (windows.size >= maxAddresses) windows.delete(windows.keys().next().value as string);
      windows.set(address, { start: t, failures: 1 });
    },
  };
}
