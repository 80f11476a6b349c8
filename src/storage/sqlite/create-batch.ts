// One group commit of creates: the plants, their outbox events and each one's outcome, in one transaction
// (one fsync). Runs in the write worker (write-worker.ts) or, for an in-memory database, on the main thread.
import type Database from 'better-sqlite3';
import type { OutboxEvent } from '../../webhooks/delivery.js';

/** A create in a group commit; writer-wire.ts flattens a batch of them for the write worker. */
export interface CreateItem {
  id: bigint;
  name: string;
  tag: string | null;
  event: OutboxEvent | undefined;
}

/** The outcome of one create; the conflicting row is returned as stored (tag null when absent). */
export type ItemOutcome = { kind: 'created' } | { kind: 'replayed' } | { kind: 'conflict'; id: bigint; name: string; tag: string | null };

interface PlantRow {
  id: bigint;
  name: string;
  tag: string | null;
}

/** Prepares the statements once; the returned function commits a batch with createPlant's rules, in order. */
export function createBatchWriter(db: Database.Database): (items: readonly CreateItem[]) => ItemOutcome[] {
  const insertPlant = db.prepare('INSERT INTO plants (id, name, tag, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO NOTHING');
  const getPlant = db.prepare('SELECT id, name, tag FROM plants WHERE id = ?').safeIntegers(true);
  const anyActiveSubscription = db.prepare('SELECT EXISTS (SELECT 1 FROM webhook_subscriptions WHERE disabled_at IS NULL)').pluck();
  const insertEvent = db.prepare('INSERT INTO webhook_events (id, type, payload, created_at) VALUES (?, ?, ?, ?)');
  // One delivery per subscription active at commit time.
  const fanOut = db.prepare(`INSERT INTO webhook_deliveries (id, event_id, subscription_id, status, attempt_count, next_attempt_at, created_at, updated_at)
    SELECT 'dlv_' || lower(hex(randomblob(12))), ?, id, 'pending', 0, ?, ?, ? FROM webhook_subscriptions WHERE disabled_at IS NULL`);
  const commit = db.transaction((items: readonly CreateItem[]): ItemOutcome[] => {
    const now = Date.now();
    let subscribers: boolean | undefined;
    const outcomes: ItemOutcome[] = new Array(items.length);
    for (let i = 0; i < items.length; i++) {
      const { id, name, tag, event } = items[i]!;
      if (insertPlant.run(id, name, tag, now).changes === 1) {
        // The event commits with the plant or not at all: nothing acknowledged can lose its event.
        subscribers ??= anyActiveSubscription.get() === 1;
        if (event && subscribers) {
          insertEvent.run(event.id, event.type, event.payload, now);
          fanOut.run(event.id, now, now, now);
        }
        outcomes[i] = { kind: 'created' };
        continue;
      }
      const row = getPlant.get(id) as PlantRow;
      outcomes[i] = row.name === name && row.tag === tag ? { kind: 'replayed' } : { kind: 'conflict', id: BigInt(row.id), name: row.name, tag: row.tag };
    }
    return outcomes;
  });
  return (items) => commit.immediate(items);
}
