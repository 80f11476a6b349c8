// JSON that keeps int64 values exact, for the client. No node: imports: this runs in browsers too.
//
// JSON.parse turns every number into a double and rounds integers above 2^53 (9007199254740993 becomes
// 9007199254740992). parseJson reads number literals as text and turns those at int64 locations of the
// schema into bigint, the others into numbers. stringifyJson writes a bigint as its exact digits.

/**
 * Parses JSON text. Numbers at `int64At` locations ("" the value itself, "/id" a property, "/*" every array
 * item, as in schema.ts's `responseInt64`) become bigint, digit for digit; every other number is a number.
 * An int64 location holding a non-integer (which the document forbids) stays a number.
 */
export function parseJson(text: string, int64At: readonly string[] = []): unknown {
  const patterns = int64At.map((p) => (p === '' ? [] : p.slice(1).split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))));
  let i = 0;
  const path: string[] = [];

  const fail = (what: string): never => {
    throw new SyntaxError(`Invalid JSON: ${what} at position ${i}`);
  };
  const ws = () => {
    while (i < text.length && (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r')) i++;
  };
  const atInt64 = () =>
    patterns.some((p) => p.length === path.length && p.every((seg, k) => (seg === '*' ? /^\d+$/.test(path[k]!) : seg === path[k])));

  const value = (): unknown => {
    ws();
    const c = text[i];
    if (c === '{') {
      i++;
      const obj: Record<string, unknown> = {};
      ws();
      if (text[i] === '}') {
        i++;
        return obj;
      }
      for (;;) {
        ws();
        if (text[i] !== '"') fail('expected a property name');
        const key = string();
        ws();
        if (text[i++] !== ':') fail('expected ":"');
        path.push(key);
        const v = value();
        path.pop();
        Object.defineProperty(obj, key, { value: v, enumerable: true, writable: true, configurable: true });
        ws();
        const d = text[i++];
        if (d === '}') return obj;
        if (d !== ',') fail('expected "," or "}"');
      }
    }
    if (c === '[') {
      i++;
      const arr: unknown[] = [];
      ws();
      if (text[i] === ']') {
        i++;
        return arr;
      }
      for (;;) {
        path.push(String(arr.length));
        arr.push(value());
        path.pop();
        ws();
        const d = text[i++];
        if (d === ']') return arr;
        if (d !== ',') fail('expected "," or "]"');
      }
    }
    if (c === '"') return string();
    if (text.startsWith('true', i)) return (i += 4), true;
    if (text.startsWith('false', i)) return (i += 5), false;
    if (text.startsWith('null', i)) return (i += 4), null;
    const m = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
    m.lastIndex = i;
    const literal = m.exec(text)?.[0];
    if (!literal) return fail('unexpected character');
    i += literal.length;
    if (atInt64()) {
      const exact = integerOf(literal);
      if (exact !== undefined) return exact;
    }
    return Number(literal);
  };

  const string = (): string => {
    const start = i;
    i++;
    while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
    if (i >= text.length) fail('unterminated string');
    i++;
    return JSON.parse(text.slice(start, i)) as string;
  };

  const result = value();
  ws();
  if (i !== text.length) fail('unexpected trailing text');
  return result;
}

/** The exact integer a JSON number literal denotes (`5`, `5.0`, `1e3`), or undefined when it has a fraction. */
function integerOf(literal: string): bigint | undefined {
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(literal);
  if (!m) return undefined;
  const [, sign = '', int = '', frac = '', exp = '0'] = m;
  let digits = int + frac;
  let scale = Number(exp) - frac.length;
  if (scale < 0) {
    const cut = digits.slice(digits.length + scale);
    if (/[1-9]/.test(cut)) return undefined;
    digits = digits.slice(0, digits.length + scale) || '0';
    scale = 0;
  }
  if (scale > 400) return undefined; // far outside int64; let the caller keep a number
  return BigInt(sign + digits + '0'.repeat(scale));
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
