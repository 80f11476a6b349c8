// An independent check that HTTP responses are the ones openapi/plant-store.yaml describes. Schemas are
// evaluated by @hyperjump/json-schema (OpenAPI 3.1 dialect, JSON Schema 2020-12), not by the service's own
// Ajv/Fastify path, so a mistake shared by the service and its validation cannot hide here.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { registerSchema, validate, type OutputUnit } from '@hyperjump/json-schema/openapi-3-1';

export const DOCUMENT_PATH = fileURLToPath(new URL('../../../openapi/plant-store.yaml', import.meta.url));

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export interface ResponseLike {
  status: number;
  headers: Headers;
  /** The raw body text ('' when there is none). */
  body: string;
}

const escapePointer = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

let documents = 0;

/** HTTP's own framing and metadata (RFC 9110/9112), on any answer of any HTTP service: not the API's headers. */
const FRAMING = new Set(['content-type', 'content-length', 'date', 'connection', 'keep-alive', 'transfer-encoding']);

export class ResponseValidator {
  readonly doc: Obj;
  private readonly uri: string;
  private readonly paths: { template: string; regex: RegExp; literal: number }[];
  private readonly compiled = new Map<string, Promise<(v: Json) => { valid: boolean }>>();
  /** Headers the document says every answer may carry (its `x-headers-on-every-answer`), lower-cased. */
  private readonly everyAnswer: Set<string>;
  /**
   * Whether headers are checked too: every required header present, every header sent declared on the answer
   * (or named by the document for every answer, or HTTP framing). On unless CONFORMANCE_HEADERS=off.
   */
  checkHeaders = process.env.CONFORMANCE_HEADERS !== 'off';

  /** `doc` is the parsed OpenAPI document (default: the repository's). */
  constructor(doc: Obj = parseYaml(readFileSync(DOCUMENT_PATH, 'utf8')) as Obj) {
    this.doc = doc;
    this.uri = `https://conformance.plant-store.invalid/${++documents}/openapi.json`;
    this.everyAnswer = new Set(((doc['x-headers-on-every-answer'] ?? []) as string[]).map((h) => h.toLowerCase()));
    registerSchema(doc as never, this.uri, 'https://spec.openapis.org/oas/3.1/schema-base');
    this.paths = Object.keys(doc.paths ?? {})
      .map((template) => ({
        template,
        regex: new RegExp(
          '^' + template.split(/\{[^}]+\}/).map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('[^/]+') + '$',
        ),
        literal: template.replace(/\{[^}]+\}/g, '').length,
      }))
      // A literal path wins over a templated one that also matches (OpenAPI "Path Templating Matching").
      .sort((a, b) => b.literal - a.literal);
  }

  /** Compiles the schemas responses are checked against, so the first checked response is not slow. */
  async warmUp(): Promise<void> {
    const pointers = new Set<string>(['#/components/schemas/Error']);
    for (const [template, raw] of Object.entries<Obj>(this.doc.paths ?? {})) {
      const item = this.deref(raw) ?? {};
      for (const [method, op] of Object.entries<Obj>(item)) {
        for (const [key, r] of Object.entries<Obj>(op?.responses ?? {})) {
          let pointer = `#/paths/${escapePointer(template)}/${method}/responses/${escapePointer(key)}`;
          let response = r;
          while (typeof response.$ref === 'string') {
            pointer = response.$ref;
            response = this.resolve(response.$ref);
          }
          for (const [type, media] of Object.entries<Obj>(response.content ?? {})) {
            if (media?.schema) pointers.add(`${pointer}/content/${escapePointer(type)}/schema`);
          }
        }
      }
    }
    for (const pointer of pointers) await this.compile(pointer);
  }

  private compile(pointer: string): Promise<(v: Json) => { valid: boolean }> {
    let validator = this.compiled.get(pointer);
    if (!validator) {
      validator = validate(`${this.uri}${encodeURI(pointer)}`) as Promise<(v: Json) => { valid: boolean }>;
      this.compiled.set(pointer, validator);
    }
    return validator;
  }

  /** Checks the document itself against the OpenAPI 3.1 meta-schema; returns the problems found. */
  async checkDocument(): Promise<string[]> {
    const out = (await validate('https://spec.openapis.org/oas/3.1/schema-base', this.doc as Json, 'BASIC')) as {
      valid: boolean;
      errors?: OutputUnit[];
    };
    return out.valid ? [] : (out.errors ?? []).map(describe);
  }

  /** The document path template that a request path falls under, if any. */
  matchPath(pathname: string): string | undefined {
    return this.paths.find((p) => p.regex.test(pathname))?.template;
  }

  /**
   * Returns the ways `res` (the answer to `method pathname`) departs from the document; [] when it conforms.
   * A path the document does not name, or a method it does not name on a path, must be answered with
   * an Error-shaped 4xx.
   */
  async check(method: string, pathname: string, res: ResponseLike): Promise<string[]> {
    const template = this.matchPath(pathname);
    const m = method.toLowerCase();
    const isHead = m === 'head';
    const item = template === undefined ? undefined : this.deref(this.doc.paths[template]);
    // HEAD is answered like GET without a body (RFC 9110), so it is checked against the GET operation.
    const opName = item?.[m] ? m : isHead && item?.get ? 'get' : undefined;
    if (!template || !opName) {
      const what = template ? `method ${method.toUpperCase()} on ${template}` : `path ${pathname}`;
      if (res.status < 400 || res.status > 499) return [`${what} is not in the document, yet the answer is ${res.status}, not a 4xx Error`];
      // A method the path does not take: the 405 every operation of the path declares.
      const notAllowed = this.doc.components?.responses?.MethodNotAllowed;
      if (template && res.status === 405 && this.checkHeaders && notAllowed) {
        const problems = this.checkHeaderSet(notAllowed, res.headers, `${method.toUpperCase()} ${template} -> 405`);
        if (problems.length > 0) return problems;
      }
      if (isHead) return [];
      return this.checkBody(res, '#/components/schemas/Error', `${what} (not in the document)`);
    }
    const where = `${method.toUpperCase()} ${template} -> ${res.status}`;
    const opPointer = `#/paths/${escapePointer(template)}/${opName}`;
    const responses: Obj = item![opName].responses ?? {};
    const key = [String(res.status), `${String(res.status)[0]}XX`, 'default'].find((k) => k in responses);
    if (key === undefined) {
      return [`${where}: status ${res.status} is not declared (declared: ${Object.keys(responses).join(', ')})`];
    }
    let pointer = `${opPointer}/responses/${escapePointer(key)}`;
    let response: Obj = responses[key];
    while (typeof response.$ref === 'string') {
      pointer = response.$ref;
      response = this.resolve(response.$ref);
    }
    const headerProblems = this.checkHeaders ? this.checkHeaderSet(response, res.headers, where) : [];
    if (headerProblems.length > 0) return headerProblems;
    const content: Obj | undefined = response.content;
    const type = res.headers.get('content-type');
    const hasBody = res.body.length > 0;
    if (!content || Object.keys(content).length === 0) {
      return hasBody ? [`${where}: the document declares no body, but one came (${type ?? 'no content-type'})`] : [];
    }
    if (res.status === 204 || res.status === 304) return [];
    if (isHead) {
      return hasBody ? [`${where}: a HEAD response carries a body`] : [];
    }
    if (type === null) return [`${where}: no content-type (declared: ${Object.keys(content).join(', ')})`];
    const mediaType = type.split(';')[0]!.trim().toLowerCase();
    const declared = Object.keys(content).find((k) => {
      const d = k.toLowerCase();
      return d === mediaType || d === '*/*' || (d.endsWith('/*') && mediaType.startsWith(d.slice(0, -1)));
    });
    if (declared === undefined) {
      return [`${where}: content-type ${mediaType} is not declared (declared: ${Object.keys(content).join(', ')})`];
    }
    const media: Obj = content[declared] ?? {};
    const isJson = mediaType === 'application/json' || mediaType.endsWith('+json');
    if (!media.schema) {
      if (isJson) {
        try {
          JSON.parse(res.body);
        } catch {
          return [`${where}: the ${mediaType} body is not JSON: ${res.body.slice(0, 200)}`];
        }
      }
      return [];
    }
    if (!isJson) return []; // Only JSON bodies are parsed here; none other has a schema in this document.
    return this.checkBody(res, `${pointer}/content/${escapePointer(declared)}/schema`, where);
  }

  /** Required headers present; every header sent declared on the answer, named for every answer, or framing. */
  private checkHeaderSet(response: Obj, headers: Headers, where: string): string[] {
    const declared = new Map<string, Obj>();
    for (const [name, h] of Object.entries<Obj>(response.headers ?? {})) declared.set(name.toLowerCase(), this.deref(h) ?? {});
    const problems: string[] = [];
    for (const [name, h] of declared) if (h.required === true && !headers.has(name)) problems.push(`${where}: required header ${name} is missing`);
    for (const name of headers.keys()) {
      if (!declared.has(name) && !this.everyAnswer.has(name) && !FRAMING.has(name)) {
        problems.push(`${where}: header ${name} is sent but not declared (declared: ${[...declared.keys()].join(', ') || 'none'})`);
      }
    }
    return problems;
  }

  private async checkBody(res: ResponseLike, schemaPointer: string, where: string): Promise<string[]> {
    let value: Json;
    try {
      // Integers beyond 2^53 lose digits here but stay integers, which is all the schemas can tell apart.
      value = JSON.parse(res.body) as Json;
    } catch {
      return [`${where}: the body is not JSON (${res.headers.get('content-type')}): ${res.body.slice(0, 200)}`];
    }
    const type = (res.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
    if (type !== 'application/json') return [`${where}: content-type ${type || '(none)'} is not application/json`];
    const out = (await this.compile(schemaPointer))(value);
    // The compiled validator answers FLAG; re-run with BASIC only to explain a failure.
    if (out.valid) return [];
    const detail = (await validate(`${this.uri}${encodeURI(schemaPointer)}`, value, 'BASIC')) as { errors?: OutputUnit[] };
    const body = res.body.length > 500 ? `${res.body.slice(0, 500)}...` : res.body;
    return [`${where}: the body does not match ${schemaPointer}: ${(detail.errors ?? []).map(describe).join('; ')}; body: ${body}`];
  }

  /**
   * Returns the ways a webhook delivery (the request the service POSTed to a receiver) departs from the
   * document's `webhooks` section; [] when it conforms. The webhook is the one its `ce-type` names. Every
   * header parameter it declares as required is present, every declared one sent is valid for its schema, and
   * every `ce-*` or `webhook-*` header sent is declared; the body is JSON valid for the webhook's body and, when
   * `format` is given, for that format's branch (plain: the event's body, envelope: its envelope).
   */
  async checkDelivery(headers: Record<string, string | string[] | undefined>, body: string, format?: 'plain' | 'envelope'): Promise<string[]> {
    const header = (name: string) => {
      const v = headers[name];
      return Array.isArray(v) ? v.join(', ') : v;
    };
    const type = header('ce-type');
    if (type === undefined) return ['a delivery without ce-type'];
    const op: Obj | undefined = this.doc.webhooks?.[type]?.post;
    if (!op) return [`a delivery whose ce-type ${type} is not a webhook of the document`];
    const where = `webhook ${type}`;
    const problems: string[] = [];
    const declared = new Map<string, string>();
    ((op.parameters ?? []) as Obj[]).forEach((raw, i) => {
      const pointer = typeof raw.$ref === 'string' ? raw.$ref : `#/webhooks/${escapePointer(type)}/post/parameters/${i}`;
      const p = this.deref(raw)!;
      if (p.in !== 'header') return;
      const name = String(p.name).toLowerCase();
      declared.set(name, `${pointer}/schema`);
      if (p.required === true && header(name) === undefined) problems.push(`${where}: required header ${name} is missing`);
    });
    for (const name of Object.keys(headers)) {
      if ((name.startsWith('ce-') || name.startsWith('webhook-')) && !declared.has(name)) problems.push(`${where}: header ${name} is sent but not declared`);
    }
    for (const [name, pointer] of declared) {
      const value = header(name);
      if (value !== undefined && !(await this.compile(pointer))(value).valid) problems.push(`${where}: header ${name}: ${value} does not match ${pointer}`);
    }
    const mediaType = (header('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
    const content: Obj = op.requestBody?.content ?? {};
    if (!(mediaType in content)) return [...problems, `${where}: content-type ${mediaType || '(none)'} is not declared (declared: ${Object.keys(content).join(', ')})`];
    let schemaPointer = `#/webhooks/${escapePointer(type)}/post/requestBody/content/${escapePointer(mediaType)}/schema`;
    if (format !== undefined) {
      // The first branch is the plain body, the second its envelope.
      const branches = (content[mediaType].schema?.oneOf ?? []) as unknown[];
      if (branches.length !== 2) return [...problems, `${where}: the body is not declared as oneOf the plain body and its envelope`];
      schemaPointer += `/oneOf/${format === 'plain' ? 0 : 1}`;
    }
    let value: Json;
    try {
      value = JSON.parse(body) as Json;
    } catch {
      return [...problems, `${where}: the body is not JSON: ${body.slice(0, 200)}`];
    }
    if (!(await this.compile(schemaPointer))(value).valid) {
      const detail = (await validate(`${this.uri}${encodeURI(schemaPointer)}`, value, 'BASIC')) as { errors?: OutputUnit[] };
      problems.push(`${where}: the body does not match ${schemaPointer}: ${(detail.errors ?? []).map(describe).join('; ')}; body: ${body.slice(0, 500)}`);
    }
    return problems;
  }

  private resolve(ref: string): Obj {
    if (!ref.startsWith('#/')) throw new Error(`only local $refs are supported: ${ref}`);
    let node: Obj = this.doc;
    for (const raw of ref.slice(2).split('/')) {
      node = node?.[raw.replace(/~1/g, '/').replace(/~0/g, '~')];
    }
    if (node === undefined) throw new Error(`unresolved $ref ${ref}`);
    return node;
  }

  private deref(node: Obj | undefined): Obj | undefined {
    while (node && typeof node.$ref === 'string') node = this.resolve(node.$ref);
    return node;
  }
}

function describe(unit: OutputUnit): string {
  return `${unit.instanceLocation || '#'} fails ${unit.absoluteKeywordLocation.replace(/^.*#/, '#')}`;
}
