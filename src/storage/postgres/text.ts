// PostgreSQL text cannot hold U+0000, which a JSON string can (and SQLite stores). Strings that contain it
// are stored with a reversible escape: U+0000 -> U+FFFF '0', U+FFFF -> U+FFFF U+FFFF. Injective, so equality
// (the tag filter) is unchanged; every other string is stored as is.
import type { TextDecoder } from '../rows.js';

const ESC = '\uffff';

export function toDbText(s: string): string;
export function toDbText(s: string | null | undefined): string | null;
export function toDbText(s: string | null | undefined): string | null {
  if (s === null || s === undefined) return null;
  if (!s.includes('\0') && !s.includes(ESC)) return s;
  return s.replace(/[\0\uffff]/g, (c) => (c === '\0' ? `${ESC}0` : ESC + ESC));
}

export function fromDbText(s: string): string;
export function fromDbText(s: string | null): string | null;
export function fromDbText(s: string | null): string | null {
  if (s === null || !s.includes(ESC)) return s;
  return s.replace(/\uffff([\s\S])/g, (_, c: string) => (c === '0' ? '\0' : ESC));
}

/**
 * fromDbText over a JSON text that PostgreSQL wrote from stored strings: U+FFFF occurs only inside its strings
 * (PostgreSQL's JSON leaves it unescaped), and an escaped U+0000 becomes the JSON escape \u0000.
 */
export function jsonFromDbText(json: string): string {
  if (!json.includes(ESC)) return json;
  return json.replace(/\uffff([\s\S])/g, (_, c: string) => (c === '0' ? '\\u0000' : ESC));
}

/** fromDbText as the rows' text decoder. */
export const pgText: TextDecoder = (s) => fromDbText(s as string | null) as typeof s;
