// The outbox's events: the event each plant write emits, as the webhook_events row its transaction writes. An
// id that carries its creation time and is shared by every delivery attempt, the type, and the exact body. The
// feed (src/events/) places these rows and makes their deliveries; this module only makes them.
import { randomBytes } from 'node:crypto';
import type { OutboxEvent } from './delivery.js';
import type { PlantRecord, PlantWrite } from '../plants/plant.js';

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

/**
 * The event of one plant write, made in the write's transaction with the version the write took: newPlant
 * and plantUpdated carry the plant as it now is, plantDeleted its id. Every body carries `version` (a delete's
 * is above any the plant had), so a receiver can drop an event older than one it has already applied. Ids are
 * written digit for digit, and every body starts with the id (delivery-message.ts reads `ce-subject` from
 * there, and PostgreSQL's webhook_events.plant_id, schema version 13).
 */
export function plantEvent(type: EventType, plant: PlantRecord, version: bigint): OutboxEvent {
  const body =
    type === 'plantDeleted'
      ? `{"id":${plant.id},"version":${version}}`
      : `{"id":${plant.id},"name":${JSON.stringify(plant.name)}${plant.tag === undefined ? '' : `,"tag":${JSON.stringify(plant.tag)}`},"version":${version}}`;
  return { id: newEventId(), type, payload: body };
}

/** The event type of each plant write, for every engine. */
export const EVENT_OF_WRITE = { create: 'newPlant', replace: 'plantUpdated', patch: 'plantUpdated', delete: 'plantDeleted' } as const satisfies Record<
  PlantWrite['op'],
  EventType
>;

/** The event of a plant write that happened (plantEvent of its type, EVENT_OF_WRITE). */
export function writeEvent(op: PlantWrite['op'], plant: PlantRecord, version: bigint): OutboxEvent {
  return plantEvent(EVENT_OF_WRITE[op], plant, version);
}
