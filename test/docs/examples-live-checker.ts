// How test/docs/examples-live.test.ts sends an operation's example request and holds the answer to the
// document's example: call, the documented response, its headers, the member-for-member comparison that binds
// made ids, and the problems found and example places checked so far.
import { stringifyJson } from '../../src/json/lossless-json.js';
import type { TestApp } from '../helpers/app.js';
import { parseExact } from '../helpers/exact-json.js';
import { pointer } from '../helpers/json-pointer.js';
import { DOC, exchange, GENERATED, MADE_ID, MADE_ID_IN_TEXT, operation, TIME_IN_TEXT, type Answer, type Node } from './examples-live-support.js';

export interface Send {
  /** Path parameters (default: each parameter's example). */
  path?: Record<string, string>;
  /** Query parameters (default: every one that has an example, with it). */
  query?: Record<string, string>;
  /** The body as JSON (default: the request body example), or a text sent as is. */
  body?: unknown;
  headers?: Record<string, string>;
  /** The bearer token (default: one with every scope); null sends none. */
  token?: string | null;
  /** Over node:http rather than fetch. */
  raw?: boolean;
  /** The server (default: the first). */
  server?: TestApp;
}

/** The checks of one run: requests to `s` (the first server) with `allScopes` unless a step says otherwise. */
export function exampleChecker(s: TestApp, allScopes: string) {
  const tokens = { all: allScopes };
  const problems: string[] = [];
  const checked = new Set<string>();

  /** The operation's example request, with what `send` changes. */
  async function call(operationId: string, send: Send = {}): Promise<Answer> {
    const { path, method, op } = operation(operationId);
    const item = DOC.paths[path];
    const params: Node[] = [...(item.parameters ?? []), ...(op.parameters ?? [])].map((p) => (typeof p.$ref === 'string' ? pointer(DOC, p.$ref) : p));
    let url = path;
    for (const p of params.filter((x) => x.in === 'path')) url = url.replace(`{${p.name}}`, encodeURIComponent(send.path?.[p.name] ?? String(p.example)));
    const query = send.query ?? Object.fromEntries(params.filter((x) => x.in === 'query' && 'example' in x).map((x) => [x.name, String(x.example)]));
    const qs = new URLSearchParams(query).toString();
    if (qs) url += `?${qs}`;
    const server = send.server ?? s;
    const headers: Record<string, string> = { ...(send.token !== null && { authorization: `Bearer ${send.token ?? tokens.all}` }) };
    let body: string | undefined;
    const content = op.requestBody?.content as Node | undefined;
    if (content && send.body !== null) {
      const [type, media] = Object.entries<Node>(content)[0]!;
      const value = send.body === undefined ? media.example : send.body;
      body = typeof value === 'string' ? value : stringifyJson(value);
      headers['content-type'] = type;
      if (send.body === undefined) checked.add(`${operation(operationId).where}/requestBody`);
    }
    Object.assign(headers, send.headers);
    const verb = method.toUpperCase();
    if (send.raw) return exchange(server.port, verb, url, headers, body);
    const res = await fetch(`${server.url}${url}`, { method: verb, headers, body });
    return { status: res.status, headers: Object.fromEntries(res.headers), text: await res.text() };
  }

  /** The response object documented for this status, its place, and the example (named, or the only one). */
  function documented(operationId: string, status: number, name?: string): { place: string; response: Node; example: unknown; type?: string } {
    const { op, where } = operation(operationId);
    const raw = op.responses[String(status)] as Node | undefined;
    if (!raw) throw new Error(`${operationId} declares no ${status}`);
    const base = typeof raw.$ref === 'string' ? raw.$ref : `${where}/responses/${status}`;
    const response = typeof raw.$ref === 'string' ? pointer(DOC, raw.$ref) : raw;
    const [type, media] = Object.entries<Node>(response.content ?? {})[0] ?? [];
    if (!media) return { place: base, response, example: undefined };
    if (name !== undefined) return { place: `${base}/examples/${name}`, response, example: media.examples[name].value, type };
    return { place: base, response, example: media.example, type };
  }

  /**
   * The answer's headers against the response's: every required one sent, every declared one sent valid for its
   * schema (a `const`, an integer's minimum), and each of `mustSend` (declared ones the case sends) sent.
   */
  function checkHeaders(label: string, response: Node, answer: Answer, mustSend: string[]): void {
    const declared = new Map(Object.entries<Node>(response.headers ?? {}).map(([name, h]) => [name.toLowerCase(), typeof h.$ref === 'string' ? pointer(DOC, h.$ref) : h]));
    for (const name of mustSend) if (!declared.has(name)) problems.push(`${label}: ${name} is not declared on this answer`);
    for (const [name, header] of declared) {
      const value = answer.headers[name];
      if (value === undefined) {
        if (header.required === true || mustSend.includes(name)) problems.push(`${label}: no ${name} header`);
        continue;
      }
      const schema: Node = header.schema ?? {};
      if ('const' in schema && value !== schema.const) problems.push(`${label}: ${name}: ${value}, the document says ${schema.const}`);
      if (schema.type === 'integer' && !(/^\d+$/.test(value) && BigInt(value) >= BigInt(schema.minimum ?? 0))) problems.push(`${label}: ${name}: ${value} is not an integer of its schema`);
    }
  }

  let exactTimes = false;
  /** Compares `actual` with `example` member for member; made ids bind in `ids`. */
  function compare(actual: unknown, example: unknown, at: string, ids: Map<string, string>, out: string[], key?: string): void {
    if (key !== undefined && key in GENERATED) {
      if (!GENERATED[key]!(actual, example)) out.push(`${at}: ${String(actual)} is not a generated ${key} (example ${String(example)})`);
      return;
    }
    if (typeof example === 'string' && MADE_ID.test(example) && (key === 'id' || key === 'eventId')) {
      const prefix = example.slice(0, example.indexOf('_') + 1);
      if (typeof actual !== 'string' || !actual.startsWith(prefix) || !MADE_ID.test(actual)) return void out.push(`${at}: ${String(actual)} is not a ${prefix} id`);
      const bound = ids.get(example);
      if (bound === undefined) {
        if ([...ids.values()].includes(actual)) out.push(`${at}: ${actual} already stands for another example id`);
        ids.set(example, actual);
      } else if (bound !== actual) out.push(`${at}: ${actual}, where the example's ${example} stands for ${bound}`);
      return;
    }
    if (typeof example === 'string' && key === 'message') {
      // The message names the ids bound above, and times of this run (when a subscription was disabled)
      // unless the step says its times are the clock's or the request's.
      const times = (text: string) => (exactTimes ? text : text.replace(TIME_IN_TEXT, '<time>'));
      const expected = times(example.replace(MADE_ID_IN_TEXT, (id) => ids.get(id) ?? id));
      const got = typeof actual === 'string' ? times(actual) : actual;
      if (got !== expected) out.push(`${at}: message ${JSON.stringify(actual)}, example ${JSON.stringify(example)}`);
      return;
    }
    if (Array.isArray(example)) {
      if (!Array.isArray(actual) || actual.length !== example.length) return void out.push(`${at}: ${stringifyJson(actual)} is not ${example.length} items like the example`);
      example.forEach((e, i) => compare(actual[i], e, `${at}/${i}`, ids, out));
      return;
    }
    if (example !== null && typeof example === 'object') {
      if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) return void out.push(`${at}: ${stringifyJson(actual)} is not an object`);
      const a = Object.keys(actual).sort().join();
      const e = Object.keys(example).sort().join();
      if (a !== e) out.push(`${at}: members ${a}, the example has ${e}`);
      for (const [k, v] of Object.entries(example)) if (k in actual) compare((actual as Node)[k], v, `${at}/${k}`, ids, out, k);
      return;
    }
    if (actual !== example) out.push(`${at}: ${String(actual)}, example ${String(example)}`);
  }

  /**
   * Asserts the answer is the example documented for `status` (`name`d among several), records the example as
   * checked, and returns the ids the example's made ids stood for. `ids` binds some beforehand (a path's id).
   */
  function expectExample(
    operationId: string,
    answer: Answer,
    status: number,
    options: { name?: string; ids?: Record<string, string>; exactTimes?: boolean; headers?: string[] } = {},
  ): Map<string, string> {
    const { place, response, example, type } = documented(operationId, status, options.name);
    const ids = new Map(Object.entries(options.ids ?? {}));
    const label = `${operationId} ${status}${options.name ? ` (${options.name})` : ''}`;
    if (answer.status !== status) {
      problems.push(`${label}: answered ${answer.status}: ${answer.text.slice(0, 300)}`);
      return ids;
    }
    checkHeaders(label, response, answer, options.headers ?? []);
    if (example === undefined) {
      if (answer.text !== '' && type === undefined) problems.push(`${label}: a body where none is documented`);
      return ids;
    }
    checked.add(place);
    const out: string[] = [];
    exactTimes = options.exactTimes ?? false;
    if (type === 'application/json') compare(parseExact(answer.text), example, '', ids, out);
    else if (answer.text !== example) out.push(`the body is not the example text`);
    exactTimes = false;
    problems.push(...out.map((p) => `${label}: ${p}`));
    return ids;
  }

  /** An example that is a part of a larger answer (the document itself, the metrics). */
  function expectPart(operationId: string, answer: Answer, holds: (example: unknown) => (text: string) => boolean) {
    const { place, example } = documented(operationId, 200);
    if (answer.status !== 200) return void problems.push(`${operationId}: answered ${answer.status}`);
    checked.add(place);
    if (!holds(example)(answer.text)) problems.push(`${operationId}: the example is not part of the answer`);
  }

  return { problems, checked, call, documented, compare, expectExample, expectPart };
}
