// Shared helpers of the list/read/delete tests: requests with a token, lossless reading of plant bodies
// (ids above 2^53 stay digits, never doubles) and the RFC 8288 Link header.
import assert from 'node:assert/strict';
import { errorOf, type TestApp } from '../helpers/app.js';

export const INT64_MAX = '9223372036854775807';
export const INT64_MIN = '-9223372036854775808';
/** 2^53 + 1: JSON.parse turns it into 9007199254740992. */
export const ABOVE_2_53 = '9007199254740993';

/** A plant as read back losslessly: the id as its decimal digits. */
export interface PlantText {
  id: string;
  name: string;
  tag?: string;
}

/** A request with a bearer token (`read` scope unless another secret is given; null sends none). */
export function call(s: TestApp, path: string, options: { method?: string; token?: string | null; headers?: Record<string, string> } = {}) {
  const token = options.token === undefined ? s.token.read : options.token;
  return fetch(`${s.url}${path}`, {
    method: options.method ?? 'GET',
    headers: { ...(token !== null && { authorization: `Bearer ${token}` }), ...options.headers },
  });
}

/** A JSON number as the digits of its source text. */
export class NumberLiteral {
  constructor(readonly text: string) {}
}

/**
 * Parses JSON with every number literal kept as its source text, so digits beyond a double survive.
 * Walks the text once, skipping string literals (a name may contain anything, digits included).
 */
export function parseLossless(text: string): unknown {
  let out = '';
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j + 1;
    } else if (c === '-' || (c >= '0' && c <= '9')) {
      let j = i + 1;
      while (j < text.length && /[-+.eE0-9]/.test(text[j]!)) j++;
      out += `{"$number":${JSON.stringify(text.slice(i, j))}}`;
      i = j;
    } else {
      out += c;
      i++;
    }
  }
  return JSON.parse(out, (_key, value) =>
    value !== null && typeof value === 'object' && !Array.isArray(value) && Object.keys(value).length === 1 && typeof value.$number === 'string'
      ? new NumberLiteral(value.$number as string)
      : value,
  );
}

/**
 * One plant object as the API writes it: exactly id (a plain integer literal), name, and tag only when set; in a
 * list, also its version (a positive plain integer, the plant's ETag), which is checked and left out of what is
 * returned, so that a list item compares with the plant GET /plants/{id} answers.
 */
function toPlantText(item: unknown, where: string, listed = false): PlantText {
  assert.ok(item !== null && typeof item === 'object' && !Array.isArray(item), `${where}: an object`);
  const o = item as Record<string, unknown>;
  const keys = Object.keys(o).sort();
  const version = listed ? ',version' : '';
  assert.ok(keys.join() === `id,name${version}` || keys.join() === `id,name,tag${version}`, `${where}: keys {id, name, tag?${version}}, got ${keys.join()}`);
  assert.ok(o.id instanceof NumberLiteral, `${where}: id is a JSON number, not ${JSON.stringify(o.id)}`);
  const id = o.id.text;
  assert.match(id, /^-?(0|[1-9]\d*)$/, `${where}: id is written as a plain integer`);
  if (listed) assert.ok(o.version instanceof NumberLiteral && /^[1-9]\d*$/.test(o.version.text), `${where}: version is a positive integer`);
  assert.equal(typeof o.name, 'string', `${where}: name is a string`);
  if ('tag' in o) assert.equal(typeof o.tag, 'string', `${where}: tag is a string`);
  return { id, name: o.name as string, ...('tag' in o && { tag: o.tag as string }) };
}

/** Asserts a 200 JSON response and returns its single plant. */
export async function plantOf(res: Response): Promise<PlantText> {
  const text = await res.text();
  assert.equal(res.status, 200, text);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
  return toPlantText(parseLossless(text), 'body');
}

/** Asserts a 200 JSON response holding a bare array of plants and returns them with the Link header. */
export async function pageOf(res: Response): Promise<{ plants: PlantText[]; link: string | null; text: string }> {
  const text = await res.text();
  assert.equal(res.status, 200, text);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
  const body = parseLossless(text);
  assert.ok(Array.isArray(body), `a bare JSON array, got ${text.slice(0, 200)}`);
  return { plants: body.map((item, i) => toPlantText(item, `item ${i}`, true)), link: res.headers.get('link'), text };
}

/** The target of the rel="next" link (RFC 8288), or undefined when the header has none. */
export function nextLink(header: string | null): string | undefined {
  if (header === null) return undefined;
  for (const m of header.matchAll(/<([^>]*)>\s*((?:;\s*[^;,]+)*)/g)) {
    const params = m[2]!.split(';').map((p) => p.trim()).filter(Boolean);
    for (const p of params) {
      const eq = /^rel\s*=\s*"?([^"]*)"?$/i.exec(p);
      if (eq && eq[1]!.toLowerCase().split(/\s+/).includes('next')) return m[1]!;
    }
  }
  return undefined;
}

/** GET /plants with this query string; returns the ids (as digits) of the page. */
export async function listIds(s: TestApp, query = ''): Promise<string[]> {
  return (await pageOf(await call(s, `/plants${query}`))).plants.map((p) => p.id);
}

/** Follows rel="next" from `first` until there is none; returns every plant in order and the page count. */
export async function followPages(s: TestApp, first: string, onPage?: (page: PlantText[], link: string | undefined) => Promise<void> | void) {
  const all: PlantText[] = [];
  let path: string | undefined = first;
  let pages = 0;
  while (path !== undefined) {
    const { plants, link } = await pageOf(await call(s, path));
    pages++;
    // Keyset order across pages: each id above the one before, so a page that repeats rows fails here
    // rather than looping.
    let last = all.length > 0 ? BigInt(all[all.length - 1]!.id) : undefined;
    for (const p of plants) {
      assert.ok(last === undefined || BigInt(p.id) > last, `page ${pages}: id ${p.id} after ${last} (duplicate or out of order)`);
      last = BigInt(p.id);
    }
    const next = nextLink(link);
    if (next !== undefined) {
      assert.ok(plants.length > 0, 'a page with a next link is not empty');
      // Resolved against the request URL (RFC 3986), and must stay on this service.
      const url: URL = new URL(next, `${s.url}${path}`);
      assert.equal(url.origin, s.url);
      path = url.pathname + url.search;
    } else {
      path = undefined;
    }
    all.push(...plants);
    await onPage?.(plants, next);
  }
  return { plants: all, pages };
}

/** Ids sorted as int64 values. */
export function sortIds(ids: Iterable<string>): string[] {
  return [...ids].sort((a, b) => {
    const d = BigInt(a) - BigInt(b);
    return d < 0n ? -1 : d > 0n ? 1 : 0;
  });
}

/** Asserts an Error response with this status (and returns it). */
export async function expectError(res: Response, status: number, what = ''): Promise<{ error: number; message: string }> {
  assert.equal(res.status, status, `${what}: status`);
  return errorOf(res);
}

/** POST /plants with the id written as these exact digits; asserts 200. */
export async function createPlant(s: TestApp, plant: PlantText): Promise<void> {
  const tag = plant.tag === undefined ? '' : `, "tag": ${JSON.stringify(plant.tag)}`;
  const res = await s.postPlant(`{"id": ${plant.id}, "name": ${JSON.stringify(plant.name)}${tag}}`);
  assert.equal(res.status, 200, `create ${plant.id}: ${await res.text()}`);
}

/** Stores many plants quickly, straight into the store the server reads (all in parallel: group commit). */
export async function seed(s: TestApp, plants: PlantText[]): Promise<void> {
  const outcomes = await Promise.all(
    plants.map((p) => s.store.createPlant({ id: BigInt(p.id), name: p.name, ...(p.tag !== undefined && { tag: p.tag }) })),
  );
  assert.ok(outcomes.every((o) => o.kind === 'created'), 'every seeded plant is new');
}

/** Ids the path must reject: outside int64, not integers, or not written as canonical decimals. */
export const BAD_IDS = [
  '9223372036854775808', // max + 1
  '-9223372036854775809', // min - 1
  '18446744073709551616',
  '1.5',
  '1.0',
  '1e3',
  '1E3',
  'abc',
  '01',
  '00',
  '-01',
  '007',
  '+1',
  ' 1',
  '1 ',
  '0x10',
  '1_000',
  '1,000',
  '--1',
  '-',
  'Infinity',
  'NaN',
  'null',
  '１', // fullwidth digit
  '٣', // Arabic-Indic digit
  '9'.repeat(500),
  '9'.repeat(5000),
  `1${'0'.repeat(499)}`,
];

export function label(id: string): string {
  return JSON.stringify(id.length > 40 ? `${id.slice(0, 8)}... (${id.length} chars)` : id);
}
