// Shared assertions for the POST /plants and error-surface tests (test/http).
import assert from 'node:assert/strict';
import { type TestApp } from '../helpers/app.js';
import { parseRawResponse, rawHttp } from '../helpers/raw-request.js';

/** POST /plants with exactly these bytes (a string is sent as UTF-8 text, never re-serialized). */
export function postBytes(s: TestApp, body: string | Uint8Array | undefined, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${s.url}/plants`, {
    method: 'POST',
    headers: { authorization: `Bearer ${s.token.write}`, ...headers },
    ...(body !== undefined && { body }),
  });
}

/** A response text that must be an Error body: exactly error and message, no framework keys, no stack. */
export function assertErrorText(text: string, status: number): { error: number; message: string } {
  assert.doesNotMatch(text, /\n\s+at /, 'no stack trace in an error body');
  const body = JSON.parse(text) as Record<string, unknown>;
  assert.deepEqual(Object.keys(body).sort(), ['error', 'message'], `Error shape, got ${text}`);
  assert.equal(body.error, status);
  assert.equal(typeof body.message, 'string');
  assert.ok((body.message as string).length > 0);
  assert.doesNotMatch(body.message as string, /FST_|ERR_|statusCode|\.ts:\d|\.js:\d/, 'no internals in the message');
  return body as { error: number; message: string };
}

/** Sends raw bytes and asserts the answer is an Error body with Content-Type application/json. */
export async function rawError(port: number, request: string | Buffer, status: number) {
  const raw = await rawHttp(port, request, 200);
  const res = parseRawResponse(raw);
  assert.equal(res.status, status, `status of ${JSON.stringify(raw.slice(0, 300))}`);
  assert.match(res.headers['content-type'] ?? '', /^application\/json/);
  return { ...res, error: assertErrorText(res.body, status) };
}
