// The list page, written once for every engine: the members of each item (the Plant schema's, in the order
// GET /plants/{id} writes them), which each engine renders into its page statement so that the database writes
// the page's JSON text (ids digit for digit, no row object made here), and how a page is read from what that
// statement answers. Measured on PostgreSQL, reading the rows and writing the JSON here made a list request
// take 1.77 times the CPU.
import type { PlantPage } from './plant.js';

export interface PageMember {
  /** The JSON member's name. */
  member: string;
  column: 'id' | 'name' | 'tag' | 'version';
  /** int64: written as the column's decimal digits; string: a JSON string. */
  kind: 'int64' | 'string';
  /** The member is absent, not null, when the column is NULL. */
  absentWhenNull?: boolean;
}

/** The first member is the id, always present: it opens every item, which is how the page finds its items. */
export const PLANT_PAGE_ITEM: readonly PageMember[] = [
  { member: 'id', column: 'id', kind: 'int64' },
  { member: 'name', column: 'name', kind: 'string' },
  { member: 'tag', column: 'tag', kind: 'string', absentWhenNull: true },
  // The plant's ETag without quotes, as in the events' data: a page that joins a list with the events stream
  // keeps the higher version of each plant (docs/events.md).
  { member: 'version', column: 'version', kind: 'int64' },
];

// Where an item starts. Inside a JSON string a quote is always escaped, so `{"id":` occurs only as an item's
// opening: a string ending in `{` is followed by `,"` or `}`, never by `id":`.
const ITEM_START = `{"${PLANT_PAGE_ITEM[0]!.member}":`;

/**
 * What a page statement answers: the JSON array of the plants the query asks for, read with one more than its
 * limit (in the same statement, so from one snapshot), and how many items the array holds.
 */
export interface PageRead {
  json: string;
  items: number;
}

/**
 * The page of a query's limit from its read: an item past the limit means more plants follow, and is cut off;
 * the page's last item gives the cursor of the next page: its id, and its name when `withName` (a name order).
 */
export function pageOf({ json, items }: PageRead, limit: number, withName = false): PlantPage {
  if (items === 0) return { json, more: false };
  const more = items > limit;
  let last = json.lastIndexOf(ITEM_START);
  if (more) {
    json = `${json.slice(0, json[last - 1] === ',' ? last - 1 : last)}]`;
    last = json.lastIndexOf(ITEM_START);
  }
  if (last === -1) return { json, more };
  const lastId = lastIdOf(json, last);
  // The last item ends the array; its name is a JSON string, read as JSON (the id as digits).
  return withName ? { json, lastId, lastName: (JSON.parse(json.slice(last, -1)) as { name: string }).name, more } : { json, lastId, more };
}

function lastIdOf(json: string, item: number): bigint {
  const from = item + ITEM_START.length;
  let to = from;
  while (json[to] !== ',' && json[to] !== '}') to++;
  return BigInt(json.slice(from, to));
}
