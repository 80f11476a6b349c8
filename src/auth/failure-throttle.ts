// Slows token guessing: each client address may fail authentication a bounded number of times per window.
// The counter is passed in (limits/ makes it) rather than imported, so auth/ never imports limits/.
// Only failures are refused: a valid token always passes, so clients sharing an address with a guesser
// (one NAT, one proxy) are never locked out by it.
import ipaddr from 'ipaddr.js';

/** Counts per key over fixed windows; limits/fixed-window.ts's limiter is one. */
export interface AttemptCounter {
  hit(key: string): unknown;
  /** What is left of the key's quota and the seconds until its window ends. */
  peek(key: string): { remaining: number; resetS: number };
}

export interface FailureThrottle {
  /** Seconds until the address may fail again, or 0 when a failure from it gets its plain 401. */
  blockedFor(address: string): number;
  recordFailure(address: string): void;
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
    blockedFor(address) {
      const s = failures.peek(failureKey(address));
      return s.remaining > 0 ? 0 : s.resetS;
    },
    recordFailure(address) {
      failures.hit(failureKey(address));
    },
  };
}
