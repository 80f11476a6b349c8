// Lossless JSON for the server, `plant-store import` and the client: integers exact over the whole int64 range
// on the way in, bigints written as exact JSON numbers on the way out. No node: imports: the client runs in
// browsers too. V8's JSON.parse rounds integers above 2^53, so text holding a long or exponent number literal
// takes a slower, lossless path; every other text is plain JSON.parse.

/**
 * What a number literal that a double may misjudge becomes in the parsed tree (its exact int64 value, if it
 * has one, is kept aside for exactInteger either way):
 * - 'schema': a view that keeps what JSON Schema asks of it: an int64 integer is its nearest double, an
 *   integer outside int64 lies beyond +-2^64 (so `format: int64` rejects it even where the double would round
 *   into range), and a fraction that a double would round to an integer is NaN (so `type: integer` rejects it);
 * - 'double': JSON.parse's own double.
 */
export type NumberViews = 'schema' | 'double';

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/**
 * A literal with 16+ significant digits or an exponent may not survive a double; one with at most 15 always
 * does (a double keeps 15 decimal digits). The digits may sit on both sides of the point: 999999999999999.99
 * has only 15 in a row, yet JSON.parse rounds it to the integer 1e15.
 */
const MAY_ROUND = /[\d.]{16}|\d[eE]/;
/**
 * Texts that may hold an integer written in a non-canonical form (`5.0`, `-0`; exponents are in MAY_ROUND):
 * such a literal takes the exact path too, so that the tree can tell it from a plain integer (see
 * writtenAsInteger).
 */
const MAY_BE_NON_CANONICAL = /\d\.0|-0/;
/** A short literal that is an integer, yet not written as one: a zero fraction or a negative zero. */
const ZERO_FRACTION_OR_NEGATIVE_ZERO = /^-?\d+\.0+$|^-0$/;
/** A JSON number (RFC 8259): no leading zeros, no bare point, no plus sign. */
const NUMBER_LITERAL = /^(-?)(0|[1-9]\d*)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;
/** A canonical decimal integer: no leading zero or plus, and zero has no sign (`-0` is not one). */
const DECIMAL_INTEGER = /^(0|-?[1-9]\d*)$/;

// Exact values the tree cannot show, by the object (or array) holding them and the key they sit under: an
// int64 whose double is not exact, or (with 'double' views) null for a literal whose double looks like an
// integer but is not one. Anything else is exactly what the tree holds.
const exactIntegers = new WeakMap<object, Map<string, bigint | null>>();
// Integers in int64 that were not written as canonical decimals (`5.0`, `1e3`, `-0`), by holder and key.
const nonCanonical = new WeakMap<object, Set<string>>();

// Long literals are smuggled through JSON.parse as strings marked with a per-process secret, so a client
// cannot forge one: JSON text "\u0000" decodes to NUL, and the random tail is never revealed.
const MARK = `\u0000${Array.from(crypto.getRandomValues(new Uint8Array(12)), (b) => b.toString(16).padStart(2, '0')).join('')}:`;
const MARK_IN_JSON = `\\u0000${MARK.slice(1)}`;

/**
 * Thrown when a text holds more number literals needing the exact path than a parse allows: each costs about a
 * microsecond, twenty times a plain one, so a body of nothing else is a cheap way to hold an event loop.
 */
export class TooManyExactNumbersError extends RangeError {
  constructor(readonly limit: number) {
    super(`more than ${limit} number literals with an exponent, a zero fraction, 16 or more digits, or -0`);
    this.name = 'TooManyExactNumbersError';
  }
}

export interface ParseOptions {
  /**
   * The most number literals (those with an exponent, a zero fraction, 16+ digits, or -0) the text may hold; past it the parse stops
   * at once with TooManyExactNumbersError. Default: no bound.
   */
  maxExactNumbers?: number;
}

/** Parses JSON text; integers are exact over the whole int64 range (see exactInteger). */
export function parseJson(text: string, numbers: NumberViews = 'schema', options: ParseOptions = {}): unknown {
  if (!MAY_ROUND.test(text) && !MAY_BE_NON_CANONICAL.test(text)) return JSON.parse(text);
  return parseLossless(text, numbers, { value: undefined }, options.maxExactNumbers ?? Infinity).value;
}

/** parseJson into a holder, so that a top-level integer is exact too: exactInteger(root, 'value'). */
export function parseJsonRoot(text: string, numbers: NumberViews = 'schema'): { value: unknown } {
  if (!MAY_ROUND.test(text) && !MAY_BE_NON_CANONICAL.test(text)) return { value: JSON.parse(text) };
  return parseLossless(text, numbers, { value: undefined }, Infinity);
}

/**
 * The exact value of holder[key] when it is an int64 integer parsed by parseJson (or readDecimalInteger),
 * else undefined.
 */
export function exactInteger(holder: object, key: string | number): bigint | undefined {
  const byKey = exactIntegers.get(holder);
  if (byKey !== undefined) {
    const exact = byKey.get(String(key));
    if (exact !== undefined) return exact ?? undefined;
  }
  const value = (holder as Record<string, unknown>)[key];
  return typeof value === 'number' && Number.isSafeInteger(value) ? BigInt(value) : undefined;
}

/**
 * False when holder[key], parsed by parseJson, is an integer written otherwise than as a canonical decimal
 * integer: with a fraction (`5.0`), an exponent (`1e3`) or as `-0`. True for everything else.
 */
export function writtenAsInteger(holder: object, key: string | number): boolean {
  return nonCanonical.get(holder)?.has(String(key)) !== true;
}

/**
 * Turns a decimal integer written as text (a path or query parameter) into a number in place, with the view
 * and exact value of a body integer (see NumberViews 'schema' and exactInteger). Anything else stays text.
 */
export function readDecimalInteger(holder: Record<string, unknown>, key: string): void {
  const text = holder[key];
  if (typeof text !== 'string' || text.length > 40 || !DECIMAL_INTEGER.test(text)) return;
  // Up to 15 digits a double is exact.
  if (text.length < 16) holder[key] = Number(text);
  else setNumber(holder, key, text, 'schema');
}

function parseLossless(text: string, numbers: NumberViews, root: { value: unknown }, maxExactNumbers: number): { value: unknown } {
  // Outside the try: the bound is no syntax error to report in the caller's text.
  const marked = markLongNumbers(text, maxExactNumbers);
  try {
    root.value = JSON.parse(marked);
    restoreMarkedNumbers(root, numbers);
    return root;
  } catch (err) {
    // Report the error in the caller's own text: positions in the marked text are shifted, and V8's snippets
    // would show part of the mark. Marking never turns valid JSON invalid, so this throws too.
    JSON.parse(text);
    throw new SyntaxError((err as Error).message.replaceAll(MARK_IN_JSON, '').replaceAll(MARK, ''));
  }
}

function isNumberChar(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || c === 0x2e || c === 0x2d || c === 0x2b || c === 0x45 || c === 0x65;
}

/** Rewrites number literals that may round into marked strings; everything else is left byte for byte. */
function markLongNumbers(text: string, maxExactNumbers: number): string {
  let out = '';
  let count = 0;
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
      if ((literal.length >= 16 || /[eE]/.test(literal) || ZERO_FRACTION_OR_NEGATIVE_ZERO.test(literal)) && NUMBER_LITERAL.test(literal)) {
        if (++count > maxExactNumbers) throw new TooManyExactNumbersError(maxExactNumbers);
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
function restoreMarkedNumbers(root: { value: unknown }, numbers: NumberViews): void {
  const stack: object[] = [root];
  while (stack.length > 0) {
    const holder = stack.pop() as Record<string, unknown>;
    for (const key of Object.keys(holder)) {
      if (key.startsWith(MARK)) throw new SyntaxError('a number cannot be an object key');
      const value = holder[key];
      if (typeof value === 'string') {
        if (value.startsWith(MARK)) setNumber(holder, key, value.slice(MARK.length), numbers);
      } else if (value !== null && typeof value === 'object') {
        stack.push(value);
      }
    }
  }
}

function setNumber(holder: Record<string, unknown>, key: string, literal: string, numbers: NumberViews): void {
  const exact = exactValue(literal);
  const view = numbers === 'double' ? Number(literal) : typeof exact === 'bigint' ? Number(exact) : exact;
  holder[key] = view;
  // Only what the tree cannot tell is kept aside: a safe integer is its own exact value, except a 'double'
  // view of a fraction that rounds to one.
  let recorded: bigint | null | undefined;
  if (typeof exact === 'bigint') recorded = Number.isSafeInteger(view) ? undefined : exact;
  else if (Number.isSafeInteger(view)) recorded = null;
  if (recorded !== undefined) {
    let byKey = exactIntegers.get(holder);
    if (!byKey) exactIntegers.set(holder, (byKey = new Map()));
    byKey.set(key, recorded);
  }
  if (typeof exact === 'bigint' && !DECIMAL_INTEGER.test(literal)) {
    let keys = nonCanonical.get(holder);
    if (!keys) nonCanonical.set(holder, (keys = new Set()));
    keys.add(key);
  }
}

/**
 * The exact value of a number literal when it is an int64 integer, else its 'schema' view: beyond +-2^64 for
 * an integer outside int64, NaN for a fraction that a double would round to an integer, the double otherwise.
 */
function exactValue(literal: string): bigint | number {
  const m = NUMBER_LITERAL.exec(literal) as RegExpExecArray;
  const sign = m[1] ?? '';
  const fraction = m[3] ?? '';
  // Significant digits without leading and trailing zeros, by index scans: a regex such as /0+$/ is
  // quadratic on a long literal with zeros inside it (one request could hold the event loop for minutes).
  const all = (m[2] ?? '') + fraction;
  let start = 0;
  let end = all.length;
  while (start < end && all.charCodeAt(start) === 0x30) start++;
  if (start === end) return 0n;
  while (all.charCodeAt(end - 1) === 0x30) end--;
  const digits = all.slice(start, end);
  const exponent = Number(m[4] ?? '0') - fraction.length + (all.length - end);
  const approx = Number(literal);
  if (exponent < 0) return Number.isInteger(approx) ? Number.NaN : approx;
  const outOfRange = sign === '-' ? Math.min(approx, -(2 ** 64)) : Math.max(approx, 2 ** 64);
  if (digits.length + exponent > 19) return outOfRange;
  const exact = BigInt(sign + digits + '0'.repeat(exponent));
  if (exact < INT64_MIN || exact > INT64_MAX) return outOfRange;
  return exact;
}

/**
 * JSON.stringify that writes a bigint as an exact JSON number (JSON.stringify throws on bigint). Follows
 * JSON.stringify otherwise: toJSON, undefined and functions dropped from objects and null in arrays,
 * non-finite numbers as null.
 */
export function stringifyJson(value: unknown): string {
  const out = write(value);
  if (out === undefined) throw new TypeError('stringifyJson: nothing to serialize');
  return out;
}

function write(value: unknown, key = ''): string | undefined {
  if (value !== null && typeof value === 'object' && typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    value = (value as { toJSON(k: string): unknown }).toJSON(key);
  }
  switch (typeof value) {
    case 'bigint':
      return value.toString();
    case 'number':
      return Number.isFinite(value) ? String(value) : 'null';
    case 'string':
    case 'boolean':
      return JSON.stringify(value);
    case 'undefined':
    case 'function':
    case 'symbol':
      return undefined;
  }
  if (value === null) return 'null';
  if (value instanceof Number || value instanceof String || value instanceof Boolean) return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map((v, k) => write(v, String(k)) ?? 'null').join(',')}]`;
  const parts: string[] = [];
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    const w = write(v, k);
    if (w !== undefined) parts.push(`${JSON.stringify(k)}:${w}`);
  }
  return `{${parts.join(',')}}`;
}
