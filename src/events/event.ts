// The event: what every change emits, written as a row of the feed's table in the change's own transaction
// (a transactional outbox). Its id carries its creation time and is shared by every delivery attempt; the feed,
// the stream and the webhooks all read this one row. The plant's event body is the plant feature's
// (plants/plant-event.ts); the commit on SQLite, the sequencing pass on PostgreSQL, places the row in the feed.
import { randomBytes } from 'node:crypto';

/**
 * An event to write in the same transaction as the change it announces: every change writes one, whether or
 * not a subscription receives its type. Its deliveries are made after the commit, by the sequencing pass
 * (events/passes.ts), one per active subscription that chose its type.
 */
export interface OutboxEvent {
  id: string;
  type: string;
  /** The exact body every delivery sends. */
  payload: string;
}

/** Every event a subscription can choose; a new subscription gets all of them unless it names some. */
export const EVENT_TYPES = ['newPlant', 'plantUpdated', 'plantDeleted'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

// An id is 16 bytes: the time in milliseconds (6 bytes, big-endian) and 10 random bytes. Time first, so that
// the ids of one commit land together in the id index: fully random ids put every event on a random index page,
// and a commit of 100 creates wrote about 4 times the WAL bytes and 1.9 times the CPU time (measured on SQLite).
// The random bytes are cut from a pool refilled 256 ids at a time: one randomBytes(16) per create was 3% of a
// durable POST's CPU time. The bytes are the same CSPRNG's; each is used once.
const POOL_IDS = 256;
const RANDOM_BYTES = 10;
let pool = Buffer.alloc(0);
let offset = 0;
const idBytes = Buffer.alloc(16);

export function newEventId(now = Date.now()): string {
  if (offset >= pool.length) {
    pool = randomBytes(RANDOM_BYTES * POOL_IDS);
    offset = 0;
  }
  idBytes.writeUIntBE(now, 0, 6);
  pool.copy(idBytes, 6, offset, offset + RANDOM_BYTES);
  offset += RANDOM_BYTES;
  return 'msg_' + idBytes.toString('base64url');
}

/** The creation time (unix milliseconds) an event id carries in its first 6 bytes; NaN for a string that is not an id. */
export function eventIdTime(id: string): number {
  const bytes = Buffer.from(id.slice('msg_'.length), 'base64url');
  return id.startsWith('msg_') && bytes.length === 16 ? bytes.readUIntBE(0, 6) : NaN;
}
