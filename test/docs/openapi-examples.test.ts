// Every example in openapi/plant-store.yaml is valid against its schema, checked with the service's own Ajv
// (JSON Schema 2020-12, strict, int64 formats): schema examples, media type examples (and `examples`), parameter
// and header examples. An Error example also names the status it is the example of. Spectral checks examples
// too, but its validator passes an Error body of the wrong status and does not know int64.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';
import type { ValidateFunction } from 'ajv/dist/2020.js';
import { createAjv } from '../../src/http/contract.js';
import { pointer } from '../helpers/json-pointer.js';

type Node = Record<string, any>;
const DOC: Node = YAML.parse(readFileSync(fileURLToPath(new URL('../../../openapi/plant-store.yaml', import.meta.url)), 'utf8'));

/** A schema with its local references replaced by what they point at (the document's schemas do not recurse). */
function inline(schema: unknown): any {
  if (Array.isArray(schema)) return schema.map(inline);
  if (schema === null || typeof schema !== 'object') return schema;
  const node = schema as Node;
  if (typeof node.$ref === 'string') return inline(pointer(DOC, node.$ref));
  // The discriminator's mapping holds references as plain strings: nothing to inline.
  return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, k === 'discriminator' ? v : inline(v)]));
}

const ajv = createAjv();
const compiled = new Map<string, ValidateFunction>();
function validatorOf(schema: unknown): ValidateFunction {
  const full = inline(schema);
  const key = JSON.stringify(full);
  let v = compiled.get(key);
  // Under a property, as the service compiles a parameter's schema: strict Ajv refuses a default at the root.
  if (!v) compiled.set(key, (v = ajv.compile({ type: 'object', properties: { value: full } })));
  return v;
}

interface Example {
  where: string;
  schema: unknown;
  value: unknown;
}

/** The examples of a schema and of every schema inside it. */
function schemaExamples(schema: unknown, where: string, out: Example[]): void {
  if (schema === null || typeof schema !== 'object') return;
  const node = schema as Node;
  if (typeof node.$ref === 'string') return; // checked where it is defined
  if ('example' in node) out.push({ where, schema: node, value: node.example });
  for (const key of ['allOf', 'oneOf', 'anyOf', 'prefixItems']) {
    (node[key] ?? []).forEach((s: unknown, i: number) => schemaExamples(s, `${where}/${key}/${i}`, out));
  }
  for (const key of ['items', 'additionalProperties', 'not', 'unevaluatedProperties']) schemaExamples(node[key], `${where}/${key}`, out);
  for (const [name, s] of Object.entries<unknown>(node.properties ?? {})) schemaExamples(s, `${where}/properties/${name}`, out);
}

/** Every example of the document, with the schema it must satisfy. */
function allExamples(): Example[] {
  const out: Example[] = [];
  for (const [name, schema] of Object.entries<unknown>(DOC.components?.schemas ?? {})) schemaExamples(schema, `#/components/schemas/${name}`, out);
  // Media types, parameters and headers: an object with a schema and an example (or named examples).
  const walk = (node: unknown, where: string): void => {
    if (node === null || typeof node !== 'object') return;
    if (Array.isArray(node)) return node.forEach((n, i) => walk(n, `${where}/${i}`));
    const n = node as Node;
    if (n.schema && typeof n.schema === 'object') {
      if ('example' in n) out.push({ where: `${where}/example`, schema: n.schema, value: n.example });
      for (const [name, ex] of Object.entries<Node>(n.examples ?? {})) {
        const e = typeof ex.$ref === 'string' ? pointer(DOC, ex.$ref) : ex;
        if ('value' in e) out.push({ where: `${where}/examples/${name}`, schema: n.schema, value: e.value });
      }
      schemaExamples(n.schema, `${where}/schema`, out);
    }
    for (const [k, v] of Object.entries(n)) if (k !== 'schema' && !(where === '#/components' && k === 'schemas')) walk(v, `${where}/${k}`);
  };
  walk(DOC.paths, '#/paths');
  walk(DOC.webhooks, '#/webhooks');
  walk(DOC.components, '#/components');
  return out;
}

test('every example in the document is valid against its schema (Ajv 2020-12, strict, int64)', () => {
  const examples = allExamples();
  assert.ok(examples.length > 100, `examples found: ${examples.length}`);
  const failures = examples.flatMap(({ where, schema, value }) => {
    const validate = validatorOf(schema);
    return validate({ value: structuredClone(value) }) ? [] : [`${where}: ${ajv.errorsText(validate.errors)}`];
  });
  assert.deepEqual(failures, []);
});

test('an Error example names the status it is the example of', () => {
  const failures: string[] = [];
  const check = (responses: Node | undefined, where: string) => {
    for (const [status, raw] of Object.entries<Node>(responses ?? {})) {
      const response = typeof raw.$ref === 'string' ? pointer(DOC, raw.$ref) : raw;
      const media = response.content?.['application/json'];
      if (!media || !/^[1-5]\d\d$/.test(status)) continue;
      const values = [media.example, ...Object.values<Node>(media.examples ?? {}).map((e) => (typeof e.$ref === 'string' ? pointer(DOC, e.$ref) : e).value)];
      for (const v of values) {
        if (v && typeof v === 'object' && 'error' in v && v.error !== Number(status)) failures.push(`${where}/${status}: example error ${v.error}`);
      }
    }
  };
  for (const [path, item] of Object.entries<Node>(DOC.paths)) {
    for (const [method, op] of Object.entries<Node>(item)) check(op?.responses, `${method.toUpperCase()} ${path}`);
  }
  // The shared response objects: their name is not a status, so their example's status must be one the
  // operations use them for.
  for (const [name, response] of Object.entries<Node>(DOC.components?.responses ?? {})) {
    const example = response.content?.['application/json']?.example;
    if (!example || typeof example.error !== 'number') continue;
    const uses = new Set<string>();
    for (const item of Object.values<Node>(DOC.paths)) {
      for (const op of Object.values<Node>(item)) {
        for (const [status, r] of Object.entries<Node>(op?.responses ?? {})) if (r.$ref === `#/components/responses/${name}`) uses.add(status);
      }
    }
    if (uses.size > 0 && !uses.has(String(example.error))) failures.push(`#/components/responses/${name}: example error ${example.error}, used for ${[...uses].join(', ')}`);
  }
  assert.deepEqual(failures, []);
});

test('a feed event ties its type to its body, and the bodies are closed', () => {
  const feed = validatorOf({ $ref: '#/components/schemas/FeedEvent' });
  const validate = (value: unknown) => feed({ value });
  const base = { id: 'msg_2KWPBgLlAfxdpx2AI54pPJ', createdAt: '2026-03-14T09:26:55.012Z' };
  const plant = { id: 1, name: 'n', version: 1 };
  const deleted = { id: 1, version: 2 };
  assert.equal(validate({ ...base, type: 'newPlant', data: plant }), true);
  assert.equal(validate({ ...base, type: 'plantUpdated', data: { ...plant, tag: 't' } }), true);
  assert.equal(validate({ ...base, type: 'plantDeleted', data: deleted }), true);
  assert.equal(validate({ ...base, type: 'plantDeleted', data: plant }), false, 'a delete with a plant body');
  assert.equal(validate({ ...base, type: 'newPlant', data: deleted }), false, 'a new plant with a delete body');
  assert.equal(validate({ ...base, type: 'plantDeleted', data: { ...deleted, name: 'n' } }), false, 'an extra member in a delete body');
  assert.equal(validate({ ...base, type: 'newPlant', data: { ...plant, extra: 1 } }), false, 'an extra member in a plant body');
  assert.equal(validate({ ...base, type: 'other', data: plant }), false, 'an unknown type');
});

test('a webhook envelope ties its type to its body, closed, and each webhook takes only its own type', () => {
  const envelope = validatorOf({ $ref: '#/components/schemas/EventEnvelope' });
  const validate = (value: unknown) => envelope({ value });
  const timestamp = '2026-03-14T09:26:55.012Z';
  const plant = { id: 1, name: 'n', version: 1 };
  const deleted = { id: 1, version: 2 };
  assert.equal(validate({ type: 'newPlant', timestamp, data: plant }), true);
  assert.equal(validate({ type: 'plantDeleted', timestamp, data: deleted }), true);
  assert.equal(validate({ type: 'plantDeleted', timestamp, data: plant }), false, 'a delete with a plant body');
  assert.equal(validate({ type: 'plantUpdated', timestamp, data: deleted }), false, 'an update with a delete body');
  assert.equal(validate({ type: 'newPlant', timestamp, data: plant, extra: 1 }), false, 'an extra member in the envelope');
  assert.equal(validate({ type: 'other', timestamp, data: plant }), false, 'an unknown type');
  for (const [type, body, other] of [['newPlant', plant, 'plantUpdated'], ['plantUpdated', plant, 'newPlant'], ['plantDeleted', deleted, 'newPlant']] as const) {
    const hook = validatorOf(DOC.webhooks[type].post.requestBody.content['application/json'].schema);
    assert.equal(hook({ value: body }), true, `${type}: plain`);
    assert.equal(hook({ value: { type, timestamp, data: body } }), true, `${type}: envelope`);
    assert.equal(hook({ value: { type: other, timestamp, data: plant } }), false, `${type}: an envelope of ${other}`);
  }
});

test('every operation declares its 405 with Allow, and the shared error answers declare the headers they carry', () => {
  const missing: string[] = [];
  for (const [path, item] of Object.entries<Node>(DOC.paths)) {
    for (const [method, op] of Object.entries<Node>(item)) {
      if (!op?.responses) continue;
      if (op.responses['405']?.$ref !== '#/components/responses/MethodNotAllowed') missing.push(`${method.toUpperCase()} ${path}: 405`);
    }
  }
  assert.equal(DOC.components.responses.MethodNotAllowed.headers.Allow.required, true);
  for (const [name, response] of Object.entries<Node>(DOC.components.responses)) {
    const headers = Object.keys(response.headers ?? {});
    const needs = name === 'MethodNotAllowed' ? ['Allow'] : ['Unauthorized', 'Forbidden', 'RequestTimeout', 'HeadersTooLarge'].includes(name) ? ['Cache-Control'] : ['Cache-Control', 'RateLimit', 'RateLimit-Policy'];
    for (const h of needs) if (!headers.includes(h)) missing.push(`#/components/responses/${name}: ${h}`);
  }
  assert.deepEqual(missing, []);
});

test('every GET has its HEAD declared: the same parameters, statuses and headers, and no body of its own', () => {
  const problems: string[] = [];
  for (const [path, item] of Object.entries<Node>(DOC.paths)) {
    if (!item.get) {
      if (item.head) problems.push(`HEAD ${path} without a GET`);
      continue;
    }
    const head = item.head as Node | undefined;
    if (!head) {
      problems.push(`GET ${path}: no HEAD declared`);
      continue;
    }
    assert.deepEqual(head.parameters, item.get.parameters, path);
    assert.deepEqual(head.security, item.get.security, path);
    assert.deepEqual(Object.keys(head.responses), Object.keys(item.get.responses), path);
    for (const [status, r] of Object.entries<Node>(head.responses)) {
      const got = item.get.responses[status];
      if (typeof r.$ref === 'string') assert.equal(r.$ref, got.$ref, `${path} ${status}`);
      else {
        assert.deepEqual(r.headers, got.headers, `${path} ${status}`);
        assert.equal(r.content, undefined, `${path} ${status}: a HEAD answer has no body`);
      }
    }
  }
  assert.deepEqual(problems, []);
});
