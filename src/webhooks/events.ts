// The events the service emits, as outbox rows: an id shared by every attempt, and the exact body.
import { randomBytes } from 'node:crypto';
import type { OutboxEvent } from './delivery.js';
import type { PlantRecord } from '../plants/plant.js';

/** Every event a subscription can choose; a new subscription gets all of them unless it names some. */
export const EVENT_TYPES = ['newPlant', 'plantUpdated', 'plantDeleted'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

// Ids are cut from a pool of random bytes refilled 256 ids at a time: one randomBytes(16) per create was 3% of
// a durable POST's CPU time. The bytes are the same CSPRNG's; each is used once.
const POOL_IDS = 256;
let pool = Buffer.alloc(0);
let offset = 0;

export function newEventId(): string {
  if (offset >= pool.length) {
    pool = randomBytes(16 * POOL_IDS);
    offset = 0;
  }
  const id = 'msg_' + pool.toString('base64url', offset, offset + 16);
  offset += 16;
  return id;
}

/**
 * The event of one plant write, made in the write's transaction with the version it gave the plant: newPlant
 * and plantUpdated carry the plant as it now is, plantDeleted its id. Every body carries `version`, so a
 * receiver can drop an event older than one it has already applied. Ids are written digit for digit.
 */
export function plantEvent(type: EventType, plant: PlantRecord, version: bigint): OutboxEvent {
  const body =
    type === 'plantDeleted'
      ? `{"id":${plant.id},"version":${version}}`
      : `{"id":${plant.id},"name":${JSON.stringify(plant.name)}${plant.tag === undefined ? '' : `,"tag":${JSON.stringify(plant.tag)}`},"version":${version}}`;
  return { id: newEventId(), type, payload: body };
}

/** The event type of each plant write. */
export const EVENT_OF_WRITE = { create: 'newPlant', replace: 'plantUpdated', delete: 'plantDeleted' } as const satisfies Record<string, EventType>;
