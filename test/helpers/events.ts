// The sequencing pass a running service makes in the background (src/events/sequencer.ts), made by hand for
// tests that drive a store directly: after it, every committed event has its feed position and deliveries.
import type { Clock } from '../../src/clock.js';
import type { Store } from '../../src/storage/store.js';

export async function sequenced(store: Store, clock?: Clock): Promise<number> {
  let events = 0;
  for (;;) {
    const pass = await store.events.sequence(100_000, new Date(clock ? clock.now() : Date.now()));
    events += pass.events;
    if (!pass.more) return events;
  }
}
