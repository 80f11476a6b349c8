// What a delivery sends besides its signature: the body in the subscription's format, and the event's
// CloudEvents 1.0 attributes as headers (HTTP binding, binary content mode), so that every receiver, and any
// CloudEvents SDK, reads the event's type without parsing the body. The signature (sender.ts) covers the body
// only: a receiver that must trust the type chooses the envelope format, whose signed body names it.
import type { WebhookFormat } from './delivery.js';

/**
 * `ce-source` of every event: the collection whose members change. With `ce-subject` (the plant id) it names
 * the plant's path, /plants/{id}; it is the same on every instance and deployment, so it never depends on how
 * the service is reached. CloudEvents asks only that source and id together be unique, and ids are.
 */
export const CLOUDEVENTS_SOURCE = '/plants';

/** The event of one delivery, as a claim returns it. */
export interface DeliveryEvent {
  /** `webhook-id`, and `ce-id`. */
  eventId: string;
  eventType: string;
  eventCreatedAt: Date;
  /** The event's exact body (the plain format). */
  payload: string;
  format: WebhookFormat;
}

export interface DeliveryMessage {
  /** The exact bytes to sign and send. */
  body: string;
  /** The `ce-*` headers, in the order they are sent. */
  headers: Record<string, string>;
}

// Every body starts with the plant's id, written digit for digit (plants/plant-event.ts plantEvent).
const LEADING_ID = /^\{"id":(-?\d{1,20})[,}]/;

/** The plant id a body names, as its digits (ids are int64, beyond what a JS number holds); undefined if none. */
export function plantIdOf(payload: string): string | undefined {
  return LEADING_ID.exec(payload)?.[1];
}

/**
 * The body and `ce-*` headers of one delivery. The envelope is built as text around the stored body, so the
 * ids in `data` stay exact. Every value here is printable ASCII without space, `"` or `%` (event types, our
 * `msg_` ids, digits, an ISO time), so none needs the binding's percent-encoding.
 */
export function deliveryMessage(e: DeliveryEvent): DeliveryMessage {
  const time = e.eventCreatedAt.toISOString();
  const subject = plantIdOf(e.payload);
  const headers: Record<string, string> = {
    'ce-specversion': '1.0',
    'ce-id': e.eventId,
    'ce-source': CLOUDEVENTS_SOURCE,
    'ce-type': e.eventType,
    ...(subject !== undefined && { 'ce-subject': subject }),
    'ce-time': time,
  };
  const body = e.format === 'envelope' ? `{"type":${JSON.stringify(e.eventType)},"timestamp":"${time}","data":${e.payload}}` : e.payload;
  return { body, headers };
}
