// The one source of the current time for rules that depend on it (expiry, caches, windows, cooldowns), so
// that tests move time by hand instead of sleeping.

/** The current time in milliseconds since the Unix epoch, as Date.now() counts it. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: Date.now };
