// Loads the OpenAPI document, the single source of truth, and derives what routing and validation need.
// `npm run build` also compiles it (contract-build.ts): the document as JSON and Ajv's standalone validators, so a
// process starts without parsing YAML or compiling schemas (loadBuiltContract). The YAML parser and Ajv load only
// when the document is read from its source.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Ajv2020, CodeOptions, ValidateFunction } from 'ajv/dist/2020.js';
import type * as YAML from 'yaml';
import { int64Decoder } from '../json/int64-decoder.js';
import { int64Paths } from '../json/int64-paths.js';
import { readDecimalInteger, stringifyJson } from '../json/lossless-json.js';
import { CONTRACT_FORMATS } from './formats.js';

const require = createRequire(import.meta.url);

export const CONTRACT_PATH = new URL('../../../openapi/plant-store.yaml', import.meta.url);
/** The module `npm run build` generates from the document (contract-build.ts). */
export const BUILT_CONTRACT_PATH = new URL('../generated/contract.js', import.meta.url);

export type JsonSchema = Record<string, unknown>;

export interface OperationSpec {
  operationId: string;
  method: string;
  /** Fastify form of the path: `/plants/:id` for `/plants/{id}`. */
  url: string;
  /** Alternatives (OR) of required scope sets (AND); an empty list means no authentication. */
  security: Array<{ scheme: string; scopes: string[] }>;
  body?: { schema: JsonSchema; required: boolean; mediaTypes: string[] };
  params?: JsonSchema;
  querystring?: JsonSchema;
  responses: Record<string, JsonSchema>;
}

export interface Contract {
  document: Record<string, any>;
  json: string;
  yaml: string;
  operations: OperationSpec[];
}

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];
/** The request bodies the service parses (http/json-parser.ts): JSON, and JSON Merge Patch (RFC 7396). */
export const JSON_MEDIA_TYPES = ['application/json', 'application/merge-patch+json'];

/** Reads the document from its source and checks it; throws (stopping start-up) on anything routing cannot honour. */
export function loadContract(path: URL | string = CONTRACT_PATH): Contract {
  const yaml = readFileSync(path, 'utf8');
  const { parse } = require('yaml') as typeof YAML;
  // The served JSON is written from a second parse that keeps every integer a bigint, so int64 examples,
  // defaults, enums and bounds keep every digit (JSON.stringify of `document` would round them to doubles).
  return contractOf(parse(yaml) as Record<string, any>, stringifyJson(parse(yaml, { intAsBigInt: true })), yaml, path);
}

/** The build's hash of the document it was generated from. */
export function sourceHash(yaml: string): string {
  return createHash('sha256').update(yaml).digest('hex');
}

/** A response serializer (fast-json-stringify's). */
export type Serializer = (data: unknown) => string;

/** What the build compiled from the document: its exact JSON, a standalone validator per request part, a serializer per response. */
export interface BuiltContract {
  contract: Contract;
  /** By validatorKey(). */
  validators: Readonly<Record<string, ValidateFunction>>;
  /** By serializerKey(). */
  serializers: Readonly<Record<string, Serializer>>;
}

/**
 * The document as `npm run build` compiled it (contract-build.ts), when that was built from the document as it is
 * now; otherwise (no build output, or the document changed since) the reason, and the caller reads the source.
 */
export async function loadBuiltContract(path: URL | string = CONTRACT_PATH, built: URL = BUILT_CONTRACT_PATH): Promise<BuiltContract | { stale: string }> {
  const yaml = readFileSync(path, 'utf8');
  let generated: { SOURCE_SHA256: string; json: string; validators: Record<string, ValidateFunction>; serializers: Record<string, Serializer> };
  try {
    generated = await import(built.href);
  } catch (err) {
    if ((err as { code?: string }).code === 'ERR_MODULE_NOT_FOUND' && String((err as Error).message).includes(built.pathname)) {
      return { stale: `${built.pathname} is missing` };
    }
    throw err;
  }
  if (generated.SOURCE_SHA256 !== sourceHash(yaml)) return { stale: `${String(path)} changed after ${built.pathname} was built` };
  // The build checked that this parse equals the YAML's (contract-build.ts).
  const { validators, serializers } = generated;
  return { contract: contractOf(JSON.parse(generated.json), generated.json, yaml, path), validators, serializers };
}

/** Where a request part's validator is found: the route's method (HEAD has its GET's), URL and part. */
export function validatorKey(method: string, url: string, httpPart: string): string {
  return `${method === 'HEAD' ? 'GET' : method} ${url} ${httpPart}`;
}

let defaultSerializerCompiler: ((route: { schema: JsonSchema; method: string; url: string; httpStatus: string }) => Serializer) | undefined;
/** Fastify's default serializer for a response schema the build did not compile (loaded only then). */
export function compileSerializer(route: { schema: JsonSchema; method: string; url: string; httpStatus: string }): Serializer {
  defaultSerializerCompiler ??= (require('@fastify/fast-json-stringify-compiler') as () => (schemas: object, options: undefined) => typeof defaultSerializerCompiler)()({}, undefined);
  return defaultSerializerCompiler!(route);
}

/** Where a response's serializer is found: the route's method (HEAD has its GET's), URL and status. */
export function serializerKey(method: string, url: string, status: string | number): string {
  return `${method === 'HEAD' ? 'GET' : method} ${url} ${status}`;
}

function contractOf(document: Record<string, any>, json: string, yaml: string, path: URL | string): Contract {
  if (typeof document?.openapi !== 'string' || !document.openapi.startsWith('3.1')) {
    throw new Error(`${String(path)}: expected an OpenAPI 3.1 document`);
  }
  const operations: OperationSpec[] = [];
  for (const [path, item] of Object.entries<Record<string, any>>(document.paths ?? {})) {
    for (const method of HTTP_METHODS) {
      const op = item[method];
      if (!op) continue;
      // HEAD is declared for clients and checkers, not routed: Fastify answers it for every GET route, with the
      // GET's handler, status and headers and no body.
      if (method === 'head') {
        if (!item.get) throw new Error(`HEAD ${path}: declared without the GET that answers it`);
        continue;
      }
      operations.push(toOperation(document, path, method, op, item.parameters ?? []));
    }
  }
  return { document, json, yaml, operations };
}

function toOperation(doc: Record<string, any>, path: string, method: string, op: Record<string, any>, shared: unknown[]): OperationSpec {
  if (typeof op.operationId !== 'string') throw new Error(`${method.toUpperCase()} ${path}: operationId missing`);
  const security = (op.security ?? doc.security ?? []) as Array<Record<string, string[]>>;
  const spec: OperationSpec = {
    operationId: op.operationId,
    method: method.toUpperCase(),
    url: path.replace(/\{([^}]+)\}/g, ':$1'),
    security: security.flatMap((req) => Object.entries(req).map(([scheme, scopes]) => ({ scheme, scopes }))),
    responses: {},
  };
  const requestBody = op.requestBody ? resolve(doc, op.requestBody) : undefined;
  if (requestBody) {
    const content = requestBody.content ?? {};
    const mediaTypes = Object.keys(content);
    if (mediaTypes.length !== 1 || !JSON_MEDIA_TYPES.includes(mediaTypes[0]!) || !content[mediaTypes[0]!].schema) {
      throw new Error(`${op.operationId}: a request body must have one media type, one of ${JSON_MEDIA_TYPES.join(', ')}, with a schema`);
    }
    spec.body = { schema: inline(doc, content[mediaTypes[0]!].schema), required: requestBody.required === true, mediaTypes };
  }
  // Path-level parameters apply to every operation of the path unless the operation redefines them.
  const own = ((op.parameters ?? []) as unknown[]).map((p) => resolve(doc, p));
  const inherited = shared.map((p) => resolve(doc, p)).filter((p) => !own.some((o) => o.name === p.name && o.in === p.in));
  const parameters = [...inherited, ...own];
  for (const [location, key] of [['path', 'params'], ['query', 'querystring']] as const) {
    const ps = parameters.filter((p) => p.in === location);
    // Every operation validates its query, so a parameter it does not declare is a 400 naming it rather
    // than a filter silently ignored.
    if (ps.length === 0 && location === 'path') continue;
    spec[key] = {
      type: 'object',
      properties: Object.fromEntries(ps.map((p) => [p.name, inline(doc, p.schema ?? {})])),
      required: ps.filter((p) => p.required).map((p) => p.name),
      ...(location === 'query' && { additionalProperties: false }),
    };
  }
  for (const [status, response] of Object.entries(op.responses ?? {})) {
    const schema = resolve(doc, response).content?.['application/json']?.schema;
    if (schema) spec.responses[status] = inline(doc, schema);
  }
  return spec;
}

function resolve(doc: Record<string, any>, node: any): any {
  let seen = 0;
  while (node && typeof node.$ref === 'string') {
    if (++seen > 32) throw new Error(`reference loop at ${node.$ref}`);
    node = pointer(doc, node.$ref);
  }
  return node;
}

function pointer(doc: Record<string, any>, ref: string): any {
  if (!ref.startsWith('#/')) throw new Error(`only local references are supported: ${ref}`);
  let node: any = doc;
  for (const part of ref.slice(2).split('/')) {
    node = node?.[part.replaceAll('~1', '/').replaceAll('~0', '~')];
    if (node === undefined) throw new Error(`unresolved reference ${ref}`);
  }
  return node;
}

/** A self-contained copy of a schema: local references replaced by what they point at. */
function inline(doc: Record<string, any>, schema: unknown, depth = 0): any {
  if (depth > 64) throw new Error('schema nesting too deep or recursive');
  if (Array.isArray(schema)) return schema.map((s) => inline(doc, s, depth + 1));
  if (schema === null || typeof schema !== 'object') return schema;
  const node = schema as Record<string, unknown>;
  if (typeof node.$ref === 'string') return inline(doc, pointer(doc, node.$ref), depth + 1);
  return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, inline(doc, v, depth + 1)]));
}

/** What an int64 written as `5.0`, `1e3` or `-0` in a body is told (validationMessage puts the member first). */
export const INT64_LITERAL_RULE = 'must be written as a plain integer (digits only: no fraction, exponent or -0)';

/**
 * Ajv in the document's own dialect (JSON Schema 2020-12). No type coercion: a string id stays a string
 * and fails. OpenAPI's own annotation keywords are known to strict mode. Formats: formats.ts. `code` is for
 * the build, which generates the validators' source (contract-build.ts).
 */
export function createAjv(code?: CodeOptions): Ajv2020 {
  const { Ajv2020 } = require('ajv/dist/2020.js') as typeof import('ajv/dist/2020.js');
  const ajv = new Ajv2020({ strict: true, allErrors: false, coerceTypes: false, useDefaults: true, removeAdditional: false, ...(code && { code }) });
  ajv.addVocabulary(['example', 'xml', 'externalDocs', 'discriminator']);
  for (const [name, format] of Object.entries(CONTRACT_FORMATS)) ajv.addFormat(name, format);
  return ajv;
}

/**
 * A validator for one part of a request that hands the handler the values the document means: every
 * `format: int64` value of a valid body, path or query becomes its exact bigint. Path and query values arrive
 * as text: integer parameters are turned into exact numbers first (no general coercion, so "1.5" or "abc"
 * stay text and fail `integer`). Validation itself sees numbers, so its verdicts and messages are Ajv's.
 */
export function compileValidator(ajv: Ajv2020, schema: JsonSchema, httpPart: string | undefined): ValidateFunction {
  return wrapValidator(ajv.compile(schema), schema, httpPart);
}

/** compileValidator's request-part handling around a validator already compiled (at build time) from `schema`. */
export function wrapValidator(validate: ValidateFunction, schema: JsonSchema, httpPart: string | undefined): ValidateFunction {
  const paths = httpPart === 'body' || httpPart === 'params' || httpPart === 'querystring' ? int64Paths(schema) : [];
  if (paths.includes('')) throw new Error(`a ${httpPart} that is itself an int64 is not supported`);
  const decode = int64Decoder(paths);
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const integers = httpPart === 'querystring' || httpPart === 'params' ? Object.keys(properties).filter((k) => properties[k]?.type === 'integer') : [];
  const query = httpPart === 'querystring';
  if (decode === undefined && integers.length === 0 && !query) return validate;
  // Validation is synchronous: one holder serves every request.
  const holder = { value: undefined as unknown };
  const wrapped = ((data: Record<string, unknown>) => {
    for (const key of integers) readDecimalInteger(data, key);
    if (!validate(data)) {
      // An unknown query parameter's or body member's message lists the ones the operation takes.
      wrapped.errors = validate.errors?.map((e) =>
        e.keyword === 'additionalProperties' && e.instancePath === '' ? { ...e, params: { ...e.params, known: Object.keys(properties) } } : e,
      );
      return false;
    }
    if (decode) {
      holder.value = data;
      const nonCanonical = decode(holder, 'value');
      holder.value = undefined;
      if (nonCanonical !== undefined) {
        wrapped.errors = [{ instancePath: nonCanonical, schemaPath: '', keyword: 'int64Literal', params: {}, message: INT64_LITERAL_RULE }];
        return false;
      }
    }
    return true;
  }) as ValidateFunction;
  return wrapped;
}
