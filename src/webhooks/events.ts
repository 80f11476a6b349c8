// The events the service emits, as outbox rows: an id shared by every attempt, and the exact body.
import { randomBytes } from 'node:crypto';
import type { OutboxEvent, PlantRecord } from '../storage/store.js';

export const EVENT_TYPES = ['newPlant'] as const;

export function newEventId(): string {
  return 'msg_' + randomBytes(16).toString('base64url');
}

/** The newPlant event: its body is the NewPlant that was created, `id` written digit for digit. */
export function newPlantEvent(plant: PlantRecord): OutboxEvent {
  const tag = plant.tag === undefined ? '' : `,"tag":${JSON.stringify(plant.tag)}`;
  return { id: newEventId(), type: 'newPlant', payload: `{"id":${plant.id},"name":${JSON.stringify(plant.name)}${tag}}` };
}
