// The dispatcher's room for sends: at most `concurrency` in flight in all and `perSubscription` per
// subscription, and the claim that fills free slots from the outbox without going past either bound.
import type { ClaimedDelivery, WebhookStore } from './delivery.js';

export interface SendSlots {
  /** The sends in flight: each settles once its attempt is recorded (or recording failed). */
  readonly inFlight: ReadonlySet<Promise<void>>;
  /** Sends in flight of one subscription. */
  of(subscriptionId: string): number;
  /** Subscriptions at their cap, which a claim skips. */
  saturated(): string[];
  /** The most sends in flight of any subscription below its cap. */
  busiest(): number;
  /** Runs `send` in a slot of its subscription; once it settles the slot is free and `freed` is called. */
  occupy(subscriptionId: string, send: () => Promise<void>, freed: () => void): void;
}

export function createSendSlots(perSubscription: number): SendSlots {
  const inFlight = new Set<Promise<void>>();
  const perSub = new Map<string, number>();
  return {
    inFlight,
    of: (subscriptionId) => perSub.get(subscriptionId) ?? 0,
    saturated() {
      const out: string[] = [];
      for (const [sub, n] of perSub) if (n >= perSubscription) out.push(sub);
      return out;
    },
    busiest() {
      let most = 0;
      for (const n of perSub.values()) if (n < perSubscription) most = Math.max(most, n);
      return most;
    },
    occupy(subscriptionId, send, freed) {
      perSub.set(subscriptionId, (perSub.get(subscriptionId) ?? 0) + 1);
      const p = send().finally(() => {
        inFlight.delete(p);
        const n = (perSub.get(subscriptionId) ?? 1) - 1;
        if (n <= 0) perSub.delete(subscriptionId);
        else perSub.set(subscriptionId, n);
        freed();
      });
      inFlight.add(p);
    },
  };
}

export interface FillSlots {
  store: WebhookStore;
  slots: SendSlots;
  concurrency: number;
  perSubscription: number;
  /** How long a claim holds a delivery. */
  leaseMs: number;
  now: () => Date;
  /** True once the dispatcher stops: no further claim. */
  stopped: () => boolean;
  /** Starts the send of a claimed delivery in its slot. */
  launch: (delivery: ClaimedDelivery) => void;
  /** Said when a claim fails (the next look tries again). */
  claimFailed: (err: unknown) => void;
}

/** Claims as many due deliveries as free slots allow, without exceeding any subscription's cap, and launches them. */
export async function fillSlots(f: FillSlots): Promise<number> {
  let launched = 0;
  // Each round gives every unsaturated subscription at most (cap - the most any of them has in flight), so no
  // subscription exceeds the cap; rounds repeat while they yield and slots remain.
  for (let round = 0; round <= f.perSubscription && !f.stopped(); round++) {
    const free = f.concurrency - f.slots.inFlight.size;
    if (free <= 0) break;
    const skip = f.slots.saturated();
    const at = f.now();
    const per = f.perSubscription - f.slots.busiest();
    let claimed: ClaimedDelivery[];
    try {
      claimed = await f.store.claimDueDeliveries({
        now: at,
        leaseUntil: new Date(at.getTime() + f.leaseMs),
        limit: free,
        perSubscription: per,
        skipSubscriptions: skip,
      });
    } catch (err) {
      f.claimFailed(err);
      break;
    }
    const got = new Map<string, number>();
    for (const c of claimed) {
      got.set(c.subscriptionId, (got.get(c.subscriptionId) ?? 0) + 1);
      f.launch(c);
    }
    launched += claimed.length;
    // Another round only helps a subscription that got all it was offered and still has room: one that got
    // fewer had nothing more due, one that got none was skipped or idle.
    let more = false;
    for (const [sub, n] of got) if (n === per && f.slots.of(sub) < f.perSubscription) more = true;
    if (!more) break;
  }
  return launched;
}

/**
 * Waits for the sends in flight, `graceMs` at most, then abandons the rest: `abandon` aborts them, and they are
 * not recorded (their leases expire and they are sent again).
 */
export async function settleOrAbandon(slots: SendSlots, graceMs: number, abandon: (inFlight: number) => void): Promise<void> {
  if (slots.inFlight.size === 0) return;
  let grace: NodeJS.Timeout | undefined;
  const expired = new Promise<'expired'>((resolve) => {
    grace = setTimeout(() => resolve('expired'), graceMs);
  });
  const all = Promise.allSettled([...slots.inFlight]).then(() => 'done' as const);
  const first = await Promise.race([all, expired]);
  clearTimeout(grace);
  if (first === 'expired') {
    abandon(slots.inFlight.size);
    await all;
  }
}
