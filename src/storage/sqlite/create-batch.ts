// One transaction of creates (one fsync): each plant inserted unless its id is taken, the event of each new
// plant with one delivery per active subscription, and for each create what was already stored under its id
// (decideCreate, in plants/, turns that into the outcome). Runs in the write worker (write-worker.ts), or on
// the main thread for an in-memory database and for import.
import type Database from 'better-sqlite3';
import type { OutboxEvent } from '../../webhooks/delivery.js';
import type { PlantRow } from '../rows.js';

/**
 * A create in a batch; writer-wire.ts flattens a batch of them for the write worker. The event may be made
 * on demand (import), only for a new plant while a subscription is active.
 */
export interface CreateItem {
  id: bigint;
  name: string;
  tag: string | null;
  event: OutboxEvent | (() => OutboxEvent) | undefined;
}

/** A plant row as stored (tag null when absent). */
/** What one create found: null when it inserted the plant, else the row already stored under its id. */
export type ItemResult = PlantRow | null;

/** Prepares the statements once; the returned function commits a batch, in order. */
export function createBatchWriter(db: Database.Database): (items: readonly CreateItem[]) => ItemResult[] {
  const insertPlant = db.prepare('INSERT INTO plants (id, name, tag, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO NOTHING');
  const getPlant = db.prepare('SELECT id, name, tag FROM plants WHERE id = ?').safeIntegers(true);
  const anyActiveSubscription = db.prepare('SELECT EXISTS (SELECT 1 FROM webhook_subscriptions WHERE disabled_at IS NULL)').pluck();
  const insertEvent = db.prepare('INSERT INTO webhook_events (id, type, payload, created_at) VALUES (?, ?, ?, ?)');
  // One delivery per subscription active at commit time.
  const fanOut = db.prepare(`INSERT INTO webhook_deliveries (id, event_id, subscription_id, status, attempt_count, next_attempt_at, created_at, updated_at)
    SELECT 'dlv_' || lower(hex(randomblob(12))), ?, id, 'pending', 0, ?, ?, ? FROM webhook_subscriptions WHERE disabled_at IS NULL`);
  const commit = db.transaction((items: readonly CreateItem[]): ItemResult[] => {
    const now = Date.now();
    let subscribers: boolean | undefined;
    const results: ItemResult[] = new Array(items.length);
    for (let i = 0; i < items.length; i++) {
      const { id, name, tag, event } = items[i]!;
      if (insertPlant.run(id, name, tag, now).changes === 1) {
        // The event commits with the plant or not at all: nothing acknowledged can lose its event.
        subscribers ??= anyActiveSubscription.get() === 1;
        if (event && subscribers) {
          const e = typeof event === 'function' ? event() : event;
          insertEvent.run(e.id, e.type, e.payload, now);
          fanOut.run(e.id, now, now, now);
        }
        results[i] = null;
        continue;
      }
      // A later create of an id created earlier in the same batch finds it here, like any stored plant.
      results[i] = getPlant.get(id) as PlantRow;
    }
    return results;
  });
  return (items) => commit.immediate(items);
}
