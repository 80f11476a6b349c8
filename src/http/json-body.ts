// Request bodies as JSON with int64-exact integers. V8's JSON.parse rounds integers above 2^53, so a body
// holding a long or exponent number literal takes a slower, lossless path; every other body is plain JSON.parse.
import { randomBytes } from 'node:crypto';
import { AppError } from '../errors.js';

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/**
 * A literal with 16+ significant digits or an exponent may not survive a double; one with at most 15 always
 * does (a double keeps 15 decimal digits). The digits may sit on both sides of the point: 999999999999999.99
 * has only 15 in a row, yet JSON.parse rounds it to the integer 1e15.
 */
const MAY_ROUND = /[\d.]{16}|\d[eE]/;
/** A JSON number (RFC 8259): no leading zeros, no bare point, no plus sign. */
const NUMBER_LITERAL = /^(-?)(0|[1-9]\d*)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

// Exact integers of the lossless path, by the object (or array) holding them and the key they sit under.
// The object itself keeps a double "view" so JSON Schema validation runs on ordinary numbers.
const exactIntegers = new WeakMap<object, Map<string, bigint>>();

// Long literals are smuggled through JSON.parse as strings marked with a per-process secret, so a client
// cannot forge one: JSON text "\u0000" decodes to NUL, and the random tail is never revealed.
const MARK = `\u0000${randomBytes(12).toString('base64url')}:`;
const MARK_IN_JSON = `\\u0000${MARK.slice(1)}`;

/** Parses a request body as JSON; integers are exact over the whole int64 range (see exactInteger). */
export function parseJsonBody(text: string): unknown {
  if (!MAY_ROUND.test(text)) return JSON.parse(text);
  try {
    return restoreMarkedNumbers(JSON.parse(markLongNumbers(text)));
  } catch (err) {
    // Report the error in the client's own text: positions in the marked text are shifted, and V8's
    // snippets would show part of the mark. Marking never turns valid JSON invalid, so this throws too.
    JSON.parse(text);
    throw err;
  }
}

/**
 * The exact value of an integer property parsed by parseJsonBody, or undefined when the property is not
 * an integer. Validation (format int64) has already rejected integers outside int64.
 */
export function exactInteger(holder: object, key: string): bigint | undefined {
  const exact = exactIntegers.get(holder)?.get(key);
  if (exact !== undefined) return exact;
  const value = (holder as Record<string, unknown>)[key];
  return typeof value === 'number' && Number.isSafeInteger(value) ? BigInt(value) : undefined;
}

function isNumberChar(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || c === 0x2e || c === 0x2d || c === 0x2b || c === 0x45 || c === 0x65;
}

/** Rewrites number literals that may round into marked strings; everything else is left byte for byte. */
function markLongNumbers(text: string): string {
  let out = '';
  let copied = 0;
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // Skip a string literal; JSON.parse judges its validity later.
      i++;
      while (i < n) {
        const d = text.charCodeAt(i);
        if (d === 0x5c) i += 2;
        else if (d === 0x22) break;
        else i++;
      }
      i++;
    } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      let j = i + 1;
      while (j < n && isNumberChar(text.charCodeAt(j))) j++;
      const literal = text.slice(i, j);
      // A malformed literal stays as it is, so JSON.parse still rejects it.
      if ((literal.length >= 16 || /[eE]/.test(literal)) && NUMBER_LITERAL.test(literal)) {
        out += `${text.slice(copied, i)}"${MARK_IN_JSON}${literal}"`;
        copied = j;
      }
      i = j;
    } else {
      i++;
    }
  }
  return copied === 0 ? text : out + text.slice(copied);
}

/** Replaces marked strings by numbers, iteratively so deep nesting cannot overflow the stack. */
function restoreMarkedNumbers(root: unknown): unknown {
  if (typeof root === 'string' && root.startsWith(MARK)) {
    const box = { v: root };
    restoreIn(box, 'v');
    const exact = exactIntegers.get(box)?.get('v');
    return exact !== undefined ? Number(exact) : box.v;
  }
  const stack: object[] = [];
  if (root !== null && typeof root === 'object') stack.push(root);
  while (stack.length > 0) {
    const holder = stack.pop() as Record<string, unknown>;
    for (const key of Object.keys(holder)) {
      if (key.startsWith(MARK)) throw new SyntaxError('a number cannot be an object key');
      const value = holder[key];
      if (typeof value === 'string') {
        if (value.startsWith(MARK)) restoreIn(holder, key);
      } else if (value !== null && typeof value === 'object') {
        stack.push(value);
      }
    }
  }
  return root;
}

function restoreIn(holder: Record<string, unknown>, key: string): void {
  setNumber(holder, key, (holder[key] as string).slice(MARK.length));
}

const DECIMAL_INTEGER = /^-?(0|[1-9]\d*)$/;

/**
 * Turns a decimal integer written as text (a path or query parameter) into a number in place, exact like a
 * body integer (see exactInteger). Anything else stays text, for validation to reject.
 */
export function parseIntegerParameter(holder: Record<string, unknown>, key: string): void {
  const text = holder[key];
  if (typeof text === 'string' && text.length <= 40 && DECIMAL_INTEGER.test(text)) setNumber(holder, key, text);
}

function setNumber(holder: Record<string, unknown>, key: string, literal: string): void {
  const { view, exact } = exactValue(literal);
  holder[key] = view;
  if (exact !== undefined) {
    let byKey = exactIntegers.get(holder);
    if (!byKey) exactIntegers.set(holder, (byKey = new Map()));
    byKey.set(key, exact);
  }
}

/**
 * The double seen by validation, and the exact value when the literal is an int64 integer. Integers outside
 * int64 get a view beyond +-2^63 (so `format: int64` rejects them even where the double would round into
 * range); fractions that would round to an integer get NaN (so `type: integer` rejects them).
 */
function exactValue(literal: string): { view: number; exact?: bigint } {
  const m = NUMBER_LITERAL.exec(literal) as RegExpExecArray;
  const sign = m[1] ?? '';
  const fraction = m[3] ?? '';
  // Significant digits without leading and trailing zeros, by index scans: a regex such as /0+$/ is
  // quadratic on a long literal with zeros inside it (one request could hold the event loop for minutes).
  const all = (m[2] ?? '') + fraction;
  let start = 0;
  let end = all.length;
  while (start < end && all.charCodeAt(start) === 0x30) start++;
  if (start === end) return { view: 0, exact: 0n };
  while (all.charCodeAt(end - 1) === 0x30) end--;
  const digits = all.slice(start, end);
  const exponent = Number(m[4] ?? '0') - fraction.length + (all.length - end);
  const approx = Number(literal);
  if (exponent < 0) return { view: Number.isInteger(approx) ? Number.NaN : approx };
  const outOfRange = sign === '-' ? Math.min(approx, -(2 ** 64)) : Math.max(approx, 2 ** 64);
  if (digits.length + exponent > 19) return { view: outOfRange };
  const exact = BigInt(sign + digits + '0'.repeat(exponent));
  if (exact < INT64_MIN || exact > INT64_MAX) return { view: outOfRange };
  return { view: Number(exact), exact };
}

/** Turns a parse failure into the client's 400. */
export function malformedJson(err: unknown): AppError {
  const detail = err instanceof SyntaxError ? `: ${err.message.replaceAll(MARK_IN_JSON, '').replaceAll(MARK, '')}` : '';
  return new AppError('BODY_MALFORMED', `The request body is not valid JSON${detail.slice(0, 200)}`);
}
