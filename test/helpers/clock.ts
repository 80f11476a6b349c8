// A clock the test moves (src/kit/clock.ts): real time plus an offset, so that expiry, caches, cooldowns and
// rate-limit windows are tested by moving time instead of sleeping, while tokens minted "now" stay valid.
import type { Clock } from '../../src/kit/clock.js';

export interface TestClock extends Clock {
  /** Moves time forward by `ms`. */
  advance(ms: number): void;
  /** Moves time forward to `at`, if it is ahead. */
  advanceTo(at: Date): void;
}

export function testClock(): TestClock {
  let offset = 0;
  return {
    now: () => Date.now() + offset,
    advance(ms) {
      offset += ms;
    },
    advanceTo(at) {
      const d = at.getTime() - Date.now() - offset;
      if (d > 0) offset += d;
    },
  };
}
