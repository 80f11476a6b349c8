// The plant's event: the body each plant write emits, made in the write's transaction with the version it took.
import { newEventId, type EventType, type OutboxEvent } from '../events/event.js';
import type { PlantRecord, PlantWrite } from './plant.js';

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
