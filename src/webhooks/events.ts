// The events the service emits, as outbox rows: an id shared by every attempt, and the exact body.
import { randomBytes } from 'node:crypto';
import type { OutboxEvent } from './delivery.js';
import type { PlantRecord } from '../plants/plant.js';

export const EVENT_TYPES = ['newPlant'] as const;

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

/** The newPlant event: its body is the NewPlant that was created, `id` written digit for digit. */
export function newPlantEvent(plant: PlantRecord): OutboxEvent {
  const tag = plant.tag === undefined ? '' : `,"tag":${JSON.stringify(plant.tag)}`;
  return { id: newEventId(), type: 'newPlant', payload: `{"id":${plant.id},"name":${JSON.stringify(plant.name)}${tag}}` };
}
