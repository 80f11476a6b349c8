// Handlers get the values the document means: validation hands them a bigint for every int64 of the body, the
// path and the query (src/http/contract.ts), so no handler consults the JSON parser.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ValidateFunction } from 'ajv/dist/2020.js';
import { compileValidator, createAjv, loadContract, type JsonSchema } from '../../src/http/contract.js';
import { parseJson } from '../../src/json/lossless-json.js';
import { validationMessage } from '../../src/http/error-replies.js';

const SRC = fileURLToPath(new URL('../../../src/', import.meta.url));

function validators() {
  const ajv = createAjv();
  const ops = new Map(loadContract().operations.map((op) => [op.operationId, op]));
  const compile = (schema: JsonSchema | undefined, part: string) => compileValidator(ajv, schema!, part);
  return {
    body: compile(ops.get('addPlant')!.body!.schema, 'body'),
    params: compile(ops.get('getPlant')!.params, 'params'),
    query: compile(ops.get('listPlants')!.querystring, 'querystring'),
    webhookParams: compile(ops.get('getWebhook')!.params, 'params'),
  };
}

const EDGES = ['0', '-1', '7', '9007199254740991', '9007199254740993', '-9007199254740993', '9223372036854775807', '-9223372036854775808'];

test('a valid body holds its id as the exact bigint', () => {
  const { body } = validators();
  for (const literal of EDGES) {
    const data = parseJson(`{"id": ${literal}, "name": "n", "child": {"id": ${literal}}, "n": ${literal}}`) as Record<string, unknown>;
    assert.equal(body(data), true, literal);
    assert.equal(data.id, BigInt(literal), literal);
    // Only the document's int64 is decoded: unknown fields stay as parsed.
    assert.equal(typeof (data.child as { id: unknown }).id, 'number', literal);
    assert.equal(typeof data.n, 'number', literal);
  }
});

test('an int64 written otherwise than as a canonical integer is refused, naming the member; elsewhere such numbers are left alone', () => {
  const { body } = validators();
  for (const literal of ['1e3', '5.0', '-0', '-0.0', '0e0', '9.223372036854775807e18', '90071992547409930e-1', '9007199254740993.000']) {
    const data = parseJson(`{"id": ${literal}, "name": "n", "child": {"id": ${literal}}, "n": ${literal}}`) as Record<string, unknown>;
    assert.equal(body(data), false, literal);
    assert.deepEqual((body as ValidateFunction).errors?.map((e) => [e.instancePath, e.keyword]), [['/id', 'int64Literal']], literal);
    assert.equal(validationMessage('body', (body as ValidateFunction).errors!), 'body/id must be written as a plain integer (digits only: no fraction, exponent or -0).', literal);
  }
  // Not an int64 member: an unknown one keeps its value and the body is valid.
  const data = parseJson('{"id": 5, "name": "n", "n": 5.0, "m": -0, "e": 1e3}') as Record<string, unknown>;
  assert.equal(body(data), true);
  assert.deepEqual(data, { id: 5n, name: 'n', n: 5, m: 0, e: 1000 });
});

test('an invalid body is reported as before and not decoded', () => {
  const { body } = validators();
  for (const literal of ['9223372036854775808', '1.5', '"1"', '1e400']) {
    const data = parseJson(`{"id": ${literal}, "name": "n"}`) as Record<string, unknown>;
    assert.equal(body(data), false, literal);
    assert.notEqual(typeof data.id, 'bigint', literal);
    assert.ok((body as ValidateFunction).errors?.[0], literal);
  }
  const noName = parseJson('{"id": 9007199254740993}') as Record<string, unknown>;
  assert.equal(body(noName), false);
  assert.equal(typeof noName.id, 'number');
});

test('path and query ids arrive as exact bigints; other parameters keep their types', () => {
  const { params, query, webhookParams } = validators();
  for (const id of EDGES) {
    const path: Record<string, unknown> = { id };
    assert.equal(params(path), true, id);
    assert.equal(path.id, BigInt(id), id);
    const q: Record<string, unknown> = { after: id, limit: '5', tag: '9007199254740993' };
    assert.equal(query(q), true, id);
    // sort is filled in with the document's default, the rest kept as sent.
    assert.deepEqual(q, { after: BigInt(id), limit: 5, tag: '9007199254740993', sort: 'id' }, id);
  }
  const defaulted: Record<string, unknown> = {};
  assert.equal(query(defaulted), true);
  assert.deepEqual(defaulted, { limit: 20, sort: 'id' });
  for (const id of ['9223372036854775808', '-9223372036854775809', '1.5', '01', '-0', '-01', 'abc', '']) assert.equal(params({ id }), false, id);
  const hook: Record<string, unknown> = { id: 'wh_123' };
  assert.equal(webhookParams(hook), true);
  assert.equal(hook.id, 'wh_123');
});

test('no handler imports the JSON parser or reads exact integers itself', () => {
  const handlers = readdirSync(SRC, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('-handlers.ts'));
  assert.ok(handlers.includes('plants/plant-handlers.ts'), handlers.join(', '));
  for (const file of handlers) {
    const text = readFileSync(`${SRC}${file}`, 'utf8');
    assert.doesNotMatch(text, /from '[./]*\/json\/|json-parser|exactInteger|readDecimalInteger|parseJson/, file);
  }
});
