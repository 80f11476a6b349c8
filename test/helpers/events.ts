// The sequencing pass a running service makes in the background (src/events/sequencer.ts), made by hand for
// tests that drive a store directly: after it, every committed event has its feed position and deliveries.
// And the count of waiting feed readers, for tests of long polls.
import type { Clock } from '../../src/clock.js';
import type { Store } from '../../src/storage/store.js';
import type { TestApp } from './app.js';
import { eventually } from './sleep.js';

export async function sequenced(store: Store, clock?: Clock): Promise<number> {
  let events = 0;
  for (;;) {
    const pass = await store.events.sequence(100_000, new Date(clock ? clock.now() : Date.now()));
    events += pass.events;
    if (!pass.more) return events;
  }
}

/**
 * The app's events_waiting gauge as a client scrapes it (a token with metrics:read is made for it), and a wait
 * until it reads `n`: how a test knows that its long polls hold their places, or have given them up.
 */
export async function eventsWaiting(s: TestApp): Promise<{ now(): Promise<number>; is(n: number): Promise<void> }> {
  const { secret } = await s.tokens.create({ name: 'metrics', scopes: ['metrics:read'] });
  const now = async () => {
    const text = await (await fetch(`${s.url}/metrics`, { headers: { authorization: `Bearer ${secret}` } })).text();
    return Number(/^plant_store_events_waiting (\d+)$/m.exec(text)?.[1]);
  };
  return {
    now,
    async is(n) {
      let value = NaN;
      await eventually(async () => (value = await now()) === n, () => `events_waiting stayed ${value}, not ${n}`, 10_000);
    },
  };
}
