// The typed client (@plant-store/client) for tests that check behaviour rather than raw wire bytes.
import assert from 'node:assert/strict';
import { createPlantStoreClient, type ErrorBody, type PlantStoreClient } from '@plant-store/client';

/** A typed client for a running service (a TestApp or its base URL), with this bearer token or none. */
export function clientFor(s: { url: string } | string, token?: string | null): PlantStoreClient {
  const baseUrl = typeof s === 'string' ? s : s.url;
  return createPlantStoreClient({ baseUrl, ...(token != null && { token }) });
}

/**
 * Asserts a client result is an Error answer with this status, as errorOf does for a raw Response: JSON
 * content type, exactly `error` and `message`, `error` equal to the status, a non-empty message. Returns it.
 */
export function clientError(result: { data?: unknown; error?: unknown; response: Response }, status: number, what = ''): ErrorBody {
  assert.equal(result.response.status, status, `${what}: status`);
  assert.match(result.response.headers.get('content-type') ?? '', /^application\/json/, `${what}: content-type`);
  assert.equal(result.data, undefined, `${what}: no data on an error`);
  const body = result.error as ErrorBody | undefined;
  assert.ok(body && typeof body === 'object', `${what}: an Error body`);
  assert.deepEqual(Object.keys(body).sort(), ['error', 'message'], `${what}: Error shape`);
  assert.equal(body.error, status, `${what}: error field`);
  assert.equal(typeof body.message, 'string');
  assert.ok(body.message.length > 0, `${what}: non-empty message`);
  return body;
}
