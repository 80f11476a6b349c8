// How a batch crosses to the write worker and back: flat arrays of values rather than an object per create.
// Structured clone writes every object's property names; flat, postMessage of a batch of 100 creates takes
// ~30 instead of ~95 us on the main thread, and the writer decodes it and encodes the outcomes faster too.
import type { CreateItem, ItemResult } from './create-batch.js';

/** Per create: id, name, tag, then the event's id, type and payload (null when there is no event). */
const SLOTS = 6;
export type WireItems = (bigint | string | null)[];

/** Per create: null when it was inserted, else the row stored under its id. */
export type WireResults = ItemResult[];

export function encodeItems(items: readonly CreateItem[]): WireItems {
  const wire: WireItems = new Array(items.length * SLOTS);
  for (let i = 0, k = 0; i < items.length; i++, k += SLOTS) {
    const { id, name, tag } = items[i]!;
    let event = items[i]!.event;
    if (typeof event === 'function') event = event();
    wire[k] = id;
    wire[k + 1] = name;
    wire[k + 2] = tag;
    wire[k + 3] = event ? event.id : null;
    wire[k + 4] = event ? event.type : null;
    wire[k + 5] = event ? event.payload : null;
  }
  return wire;
}

export function decodeItems(wire: WireItems): CreateItem[] {
  const items = new Array<CreateItem>(wire.length / SLOTS);
  for (let i = 0, k = 0; i < items.length; i++, k += SLOTS) {
    const eventId = wire[k + 3] as string | null;
    items[i] = {
      id: wire[k] as bigint,
      name: wire[k + 1] as string,
      tag: wire[k + 2] as string | null,
      event: eventId === null ? undefined : { id: eventId, type: wire[k + 4] as string, payload: wire[k + 5] as string },
    };
  }
  return items;
}
