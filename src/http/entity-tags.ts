// Entity tags of plants (RFC 9110 section 8.8.3): a plant's version as a strong tag, `"42"`, and the
// conditional request fields that name them. Tags this service never issued simply match nothing.
import { AppError } from '../errors/catalogue.js';

/** The ETag of a plant version. */
export function etagOf(version: bigint): string {
  return `"${version}"`;
}

/** What If-Match or If-None-Match asks: any current plant (`*`), or one of these versions. */
export type TagCondition = '*' | { versions: bigint[] };

// One entity tag of a list: optional W/ then a quoted string of etagc characters (RFC 9110), then a comma or the end.
const TAG = /[ \t]*(W\/)?"([\x21\x23-\x7e\x80-\xff]*)"[ \t]*(?:,|$)/y;
const VERSION = /^(0|[1-9]\d{0,18})$/;
/** More tags than a client could mean; bounds the work a header can cause. */
const MAX_TAGS = 32;

/**
 * Parses If-Match (strong comparison: weak tags never match) or If-None-Match (weak comparison: W/"42"
 * matches "42"); undefined when the field is absent. A malformed field is 400 rather than ignored: a
 * client that believes it sent a precondition must not have its write applied unconditionally.
 */
export function tagCondition(field: string, value: string | undefined, weak: boolean): TagCondition | undefined {
  if (value === undefined) return undefined;
  if (value.trim() === '*') return '*';
  const versions: bigint[] = [];
  TAG.lastIndex = 0;
  for (let count = 0; TAG.lastIndex < value.length; count++) {
    if (count === MAX_TAGS) throw new AppError('BAD_REQUEST', `${field} names more than ${MAX_TAGS} entity tags.`);
    const at = TAG.lastIndex;
    const m = TAG.exec(value);
    if (!m || m.index !== at) {
      throw new AppError('BAD_REQUEST', `${field} must be * or a comma-separated list of entity tags such as "42" (from ETag).`);
    }
    if (m[1] !== undefined && !weak) continue;
    if (VERSION.test(m[2]!)) versions.push(BigInt(m[2]!));
  }
  return { versions };
}

/** Whether a condition holds for a plant with this version. */
export function matches(condition: TagCondition, version: bigint): boolean {
  return condition === '*' || condition.versions.includes(version);
}
