// Slows token guessing: each client address may fail authentication a bounded number of times per window.
// The counter is passed in (limits/ makes it) rather than imported, so auth/ never imports limits/.
// Only failures are refused: a valid token always passes, so clients sharing an address with a guesser
// (one NAT, one proxy) are never locked out by it.
import ipaddr from 'ipaddr.js';

/** Where a key stands once a failure was counted: `allowed` is false when its quota was already used. */
export interface CountedFailure {
  allowed: boolean;
  /** The quota of one window. */
  limit: number;
  /** Window length in seconds. */
  windowS: number;
  /** What is left of the quota in the current window. */
  remaining: number;
  /** Seconds until the window ends. */
  resetS: number;
}

/**
 * Counts per key over fixed windows; limits/fixed-window.ts's limiter is one, and so is a worker's counter of a
 * multi-process server, which counts in the primary (hence the promise).
 */
export interface AttemptCounter {
  hit(key: string): CountedFailure | Promise<CountedFailure>;
}

export interface FailureThrottle {
  /** Counts a failure from `address`; `allowed` false means it already used its quota: 429 for `resetS`. */
  recordFailure(address: string): CountedFailure | Promise<CountedFailure>;
}

/**
 * The key failures of `address` count against: an IPv4 address itself (also when IPv4-mapped), and the
 * /64 of an IPv6 address, since one host commonly holds a whole /64 and could rotate through it.
 */
export function failureKey(address: string): string {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(address.replace(/%.*$/, ''));
  } catch {
    return address;
  }
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const v6 = parsed as ipaddr.IPv6;
  if (v6.isIPv4MappedAddress()) return v6.toIPv4Address().toString();
  const parts = v6.parts.slice(0, 4).map((p) => p.toString(16));
  return `${parts.join(':')}::/64`;
}

export function createFailureThrottle(failures: AttemptCounter): FailureThrottle {
  return {
    recordFailure(address) {
      return failures.hit(failureKey(address));
    },
  };
}
