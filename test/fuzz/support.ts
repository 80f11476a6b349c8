// Shared pieces of the property-based fuzz suite (test/fuzz/*.test.ts).
//
// Longer runs by hand (after `npm run build`):
//   FUZZ_RUNS=20 node --test --import ./dist/test/setup/validate-responses.js dist/test/fuzz/*.test.js
// multiplies every property's number of cases by FUZZ_RUNS (default 1, about 10,000 cases in all), and
//   FUZZ_SEED=123456 node --test ... dist/test/fuzz/*.test.js
// replays a run: every property logs its seed as a test diagnostic and fast-check prints the seed and the
// counterexample path when a property fails.
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import fc from 'fast-check';
import type { TestApp } from '../helpers/app.js';
import { parseRawResponse } from '../helpers/raw-request.js';

const MULTIPLIER = Math.max(1, Number(process.env.FUZZ_RUNS ?? '1') || 1);
const FIXED_SEED = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED);

/** fast-check parameters for a property with `base` cases in CI; the seed is logged as a diagnostic. */
export function params(t: TestContext, base: number): fc.Parameters<unknown> {
  const seed = FIXED_SEED ?? (Date.now() ^ (Math.random() * 0x7fffffff)) | 0;
  const numRuns = base * MULTIPLIER;
  t.diagnostic(`fast-check seed ${seed}, ${numRuns} runs (replay with FUZZ_SEED=${seed})`);
  return { seed, numRuns, endOnFailure: true, interruptAfterTimeLimit: 10 * 60_000 * MULTIPLIER };
}

/** Runs a property; on failure the error carries fast-check's report with seed and path. */
export async function check<T>(t: TestContext, base: number, prop: fc.IAsyncPropertyWithHooks<T> | fc.IAsyncProperty<T>) {
  const p = params(t, base);
  const details = await fc.check(prop, p as fc.Parameters<T>);
  counted.cases += details.numRuns;
  if (details.failed) {
    const report = (fc.defaultReportMessage(details) ?? 'property failed').slice(0, 4_000);
    const cause = String((details.errorInstance as Error | undefined)?.message ?? details.errorInstance).replace(/(.)\1{100,}/g, (m, c: string) => `${c}…×${m.length}`).slice(0, 3_000);
    throw new Error(`${report}\nseed ${details.seed}\ncause: ${cause}`);
  }
}

export const counted = { cases: 0 };

/** The property for one answer: never 5xx; an error answer is exactly the contract's Error in JSON. */
export function assertAnswer(status: number, contentType: string | null | undefined, text: string, what: string) {
  assert.ok(status >= 200 && status < 500, `${what}: status ${status} ${text.slice(0, 300)}`);
  if (status < 400) return;
  assert.match(contentType ?? '', /^application\/json/, `${what}: error content-type ${contentType}`);
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    assert.fail(`${what}: error body is not JSON: ${text.slice(0, 300)}`);
  }
  assert.deepEqual(Object.keys(body).sort(), ['error', 'message'], `${what}: Error shape, got ${text.slice(0, 300)}`);
  assert.equal(body.error, status, `${what}: error field`);
  assert.equal(typeof body.message, 'string');
  assert.doesNotMatch(text, /\n\s+at /, `${what}: no stack trace`);
}

/** fetch, then the property on the answer. Returns the status. */
export async function fetchChecked(url: string, init: RequestInit, what: string): Promise<number> {
  let res: Response;
  try {
    res = await fetch(url, { ...init, signal: AbortSignal.timeout(10_000) });
  } catch (e) {
    // A request fetch itself refuses to build (invalid header value, …) never reached the server.
    if (e instanceof TypeError && !/fetch failed/.test(e.message)) return 0;
    throw new Error(`${what}: ${(e as Error).message}${(e as { cause?: Error }).cause ? ` (${(e as { cause: Error }).cause.message})` : ''}`);
  }
  const text = await res.text();
  assertAnswer(res.status, res.headers.get('content-type'), text, what);
  return res.status;
}

/** Checks every response in a raw answer (pipelined responses with Content-Length are split). */
export function assertRawAnswer(raw: string, what: string): number[] {
  const statuses: number[] = [];
  let rest = raw;
  while (rest.length > 0) {
    const headEnd = rest.indexOf('\r\n\r\n');
    assert.ok(headEnd > 0 && rest.startsWith('HTTP/1.1 '), `${what}: malformed answer ${JSON.stringify(rest.slice(0, 200))}`);
    const head = parseRawResponse(rest.slice(0, headEnd + 4));
    const length = head.headers['content-length'];
    const after = rest.slice(headEnd + 4);
    if (head.status >= 100 && head.status < 200) {
      rest = after; // an interim answer (100 Continue) has no body; the final answer follows
      continue;
    }
    let bodyEnd: number;
    // A HEAD answer has headers only: nothing, or the next pipelined answer, follows them.
    if (after === '' || after.startsWith('HTTP/1.1 ')) {
      assert.ok(head.status < 500, `${what}: status ${head.status}`);
      statuses.push(head.status);
      rest = after;
      continue;
    }
    if (length !== undefined) bodyEnd = headEnd + 4 + Number(length);
    else if (head.headers['transfer-encoding'] === 'chunked') {
      const term = rest.indexOf('\r\n0\r\n\r\n', headEnd);
      bodyEnd = term < 0 ? rest.length : term + 7;
    } else bodyEnd = rest.length;
    let body = rest.slice(headEnd + 4, bodyEnd);
    if (head.headers['transfer-encoding'] === 'chunked') body = dechunk(body);
    // latin1 → bytes → UTF-8 text, so non-ASCII messages parse.
    const text = Buffer.from(body, 'latin1').toString('utf8');
    assertAnswer(head.status, head.headers['content-type'], text, `${what} → ${head.status}`);
    statuses.push(head.status);
    rest = rest.slice(bodyEnd);
  }
  return statuses;
}

function dechunk(s: string): string {
  let out = '';
  let i = 0;
  while (i < s.length) {
    const lineEnd = s.indexOf('\r\n', i);
    if (lineEnd < 0) break;
    const size = parseInt(s.slice(i, lineEnd), 16);
    if (!size) break;
    out += s.slice(lineEnd + 2, lineEnd + 2 + size);
    i = lineEnd + 2 + size + 2;
  }
  return out;
}

/** The server is alive and still serves: a valid POST /plants answers 200 and the plant reads back. */
export async function assertStillServes(s: TestApp, id: number) {
  const res = await s.postPlant({ id, name: `alive-${id}`, tag: 'fuzz' });
  assert.equal(res.status, 200, `valid POST /plants after fuzzing: ${res.status} ${await res.text()}`);
  await res.arrayBuffer().catch(() => {});
  const got = await fetch(`${s.url}/plants/${id}`, { headers: { authorization: `Bearer ${s.token.read}` } });
  assert.equal(got.status, 200);
  assert.equal(((await got.json()) as { name: string }).name, `alive-${id}`);
}

/** RSS must stay under a generous bound across a run (the server runs in this process). */
export function memoryGuard(t: TestContext, boundMb = 600) {
  const start = process.memoryUsage().rss;
  return () => {
    const now = process.memoryUsage().rss;
    const grownMb = (now - start) / 2 ** 20;
    t.diagnostic(`rss ${Math.round(start / 2 ** 20)} MB → ${Math.round(now / 2 ** 20)} MB (+${grownMb.toFixed(1)} MB)`);
    assert.ok(grownMb < boundMb, `rss grew by ${grownMb.toFixed(1)} MB (> ${boundMb} MB)`);
  };
}

// ---- Arbitraries -------------------------------------------------------------------------------

/** Strings that tend to break things: long, non-ASCII, control characters, lone surrogates, JSON-ish. */
export const nastyString = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.constantFrom('', ' ', '\u0000', '\ud800', '\ufeff', '../../etc/passwd', '%00', '%', '%ZZ', '__proto__', 'constructor', '${x}', '<script>', "'; DROP TABLE plants;--", 'null', '1e309', '-0', 'NaN'),
  fc.integer({ min: 1_000, max: 200_000 }).map((n) => 'x'.repeat(n)),
);

/** Numbers outside the safe range, fractions, exponents, written as JSON text. */
export const hugeNumberText = fc.oneof(
  fc.constantFrom('9223372036854775807', '9223372036854775808', '-9223372036854775808', '-9223372036854775809', '1e308', '1e309', '-1e309', '4.5', '0.0', '-0', '1E2', '1e-400', '123456789012345678901234567890', '9007199254740993', '0x10', '00', '+1', 'NaN', 'Infinity'),
  fc.bigInt({ min: -(2n ** 80n), max: 2n ** 80n }).map(String),
  fc.double().filter(Number.isFinite).map(String),
  fc.integer({ min: 20, max: 5_000 }).map((n) => '9'.repeat(n)),
);

/** JSON text nested `depth` levels. */
export const deepNesting = fc
  .tuple(fc.integer({ min: 10, max: 20_000 }), fc.constantFrom('[', '{"a":'), fc.boolean())
  .map(([depth, open, closed]) => {
    const close = open === '[' ? ']' : '}';
    return `{"id":1,"name":${open.repeat(depth)}1${closed ? close.repeat(depth) : ''}}`;
  });

/** A JSON value with adversarial leaves. */
export const jsonish: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    fc.integer(),
    fc.double(),
    fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map((b) => Number(b)),
    nastyString,
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom('id', 'name', 'tag', 'url', '__proto__', 'constructor')), tie('value'), { maxKeys: 4 }),
  ),
})).value;

/** Byte-level mutations of a valid text: flip, insert, delete, truncate, duplicate. */
export function mutate(base: string): fc.Arbitrary<Buffer> {
  const bytes = Buffer.from(base);
  return fc
    .array(
      fc.tuple(fc.constantFrom('flip', 'insert', 'delete', 'truncate', 'dup'), fc.nat(), fc.integer({ min: 0, max: 255 })),
      { minLength: 1, maxLength: 4 },
    )
    .map((ops) => {
      let b = Buffer.from(bytes);
      for (const [op, at, byte] of ops) {
        const i = b.length === 0 ? 0 : at % b.length;
        if (op === 'flip' && b.length) b[i] = byte;
        else if (op === 'insert') b = Buffer.concat([b.subarray(0, i), Buffer.from([byte]), b.subarray(i)]);
        else if (op === 'delete') b = Buffer.concat([b.subarray(0, i), b.subarray(i + 1)]);
        else if (op === 'truncate') b = b.subarray(0, i);
        else if (op === 'dup') b = Buffer.concat([b, b]);
      }
      return b;
    });
}

export const oddContentType = fc.oneof(
  fc.constantFrom(
    'application/json',
    'application/json; charset=utf-8',
    'application/json; charset=latin1',
    'application/json; charset=utf-16',
    'APPLICATION/JSON',
    'application/json;;;',
    'application/json; charset="utf-8"; boundary=x',
    'application/merge-patch+json',
    'application/vnd.api+json',
    'text/plain',
    'text/json',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=abc',
    'application/octet-stream',
    '*/*',
    '',
    ';',
    'application/',
    '/json',
    'application/json\u0000',
  ),
  fc.string({ maxLength: 40 }),
);

export const oddEncoding = fc.constantFrom(undefined, 'gzip', 'deflate', 'br', 'identity', 'chunked', 'x-unknown', 'gzip, gzip', '');

/** Junk for one path segment (already percent-encoded where needed, or deliberately broken). */
export const pathJunk = fc.oneof(
  fc.string({ maxLength: 30 }).map(encodeURIComponent),
  hugeNumberText.map(encodeURIComponent),
  fc.constantFrom('%', '%zz', '%00', '%2F', '..', '.', '%2e%2e', '-1', '0', '1.5', '1e3', ' 1', '%20', 'ffff', '%C0%AF', '%ED%A0%80', '%FF', 'a;b', '@', '~'),
  // Long, but the whole request line stays under Node's 16 KiB header limit: past it every operation answers
  // 431, which openapi/plant-store.yaml declares for POST /plants only (the raw-socket fuzz covers 431).
  fc.integer({ min: 300, max: 2_000 }).map((n) => '1'.repeat(n)),
);

/** Junk query strings (whole `?…`). */
export const queryJunk = fc.oneof(
  fc.constant(''),
  fc
    .array(
      fc.tuple(
        fc.oneof(fc.constantFrom('limit', 'after', 'tag', 'cursor', '__proto__', 'limit[]', 'limit[a]', ''), fc.string({ maxLength: 10 }).map(encodeURIComponent)),
        fc.oneof(pathJunk, fc.integer().map(String), fc.constantFrom('', '1', '1000', '1001', '0', 'true')),
      ),
      { maxLength: 5 },
    )
    .map((pairs) => '?' + pairs.map(([k, v]) => `${k}=${v}`).join('&')),
  fc.constantFrom('?', '??', '?&&&', '?limit', '?limit=1&limit=2', '?%', '?a=%zz', '?after=1&after=x', '#frag', '?limit=' + '9'.repeat(400)),
);
