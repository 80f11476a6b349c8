// Requests many tests make the same way through fetch: a JSON POST with a chosen credential, POST /plants (as
// any credential, or as a token that must create it), GET /plants with a token, and the check of a 401
// invalid_token answer.
import assert from 'node:assert/strict';
import { errorOf } from './app.js';

/** A bearer token, or the Authorization header as it goes on the wire (`authorization` absent: no header). */
export type Credential = string | { authorization?: string };

function baseOf(base: { url: string } | string): string {
  return typeof base === 'string' ? base : base.url;
}

function authorization(credential: Credential): Record<string, string> {
  const header = typeof credential === 'string' ? `Bearer ${credential}` : credential.authorization;
  return header === undefined ? {} : { authorization: header };
}

/** POST `body`, as JSON, to `path` at `base` (a running service or its URL) as `credential`. */
export function postJson(base: { url: string } | string, credential: Credential, path: string, body: unknown): Promise<Response> {
  return fetch(`${baseOf(base)}${path}`, {
    method: 'POST',
    headers: { ...authorization(credential), 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

/** POST /plants at `base` as `credential`, with `plant` as the JSON body: a number stands for the plant of that id named fern. */
export function postWith(base: { url: string } | string, credential: Credential, plant: number | object): Promise<Response> {
  return postJson(base, credential, '/plants', typeof plant === 'number' ? { id: plant, name: 'fern' } : plant);
}

/** POST /plants at `base` with a bearer token, the id written digit for digit (beyond 2^53 too); it must answer 200. */
export async function createPlant(base: { url: string } | string, token: string, id: bigint | number, name = `p${id}`): Promise<void> {
  const res = await fetch(`${baseOf(base)}/plants`, {
    method: 'POST',
    headers: { ...authorization(token), 'content-type': 'application/json' },
    body: `{"id":${id},"name":${JSON.stringify(name)}}`,
  });
  assert.equal(res.status, 200, await res.text());
}

/** GET /plants (one at most) at `base` with a bearer token. */
export function listPlants(base: { url: string } | string, token: string): Promise<Response> {
  return fetch(`${baseOf(base)}/plants?limit=1`, { headers: authorization(token) });
}

/**
 * Asserts 401 with RFC 6750 `error="invalid_token"` and the contract's Error body; `why`, when given, in both
 * the challenge and the message; and nothing of `token` (its parts of 8 characters or more) echoed.
 */
export async function assertInvalidToken(res: Response, why?: RegExp, token = ''): Promise<void> {
  assert.equal(res.status, 401, await res.clone().text());
  const challenge = res.headers.get('www-authenticate') ?? '';
  assert.ok(challenge.startsWith('Bearer realm="plant-store", '), challenge);
  assert.match(challenge, /(^|[ ,])error="invalid_token"/);
  const { message } = await errorOf(res);
  if (why) {
    assert.match(challenge, why);
    assert.match(message, why);
  }
  for (const part of token.split('.').filter((p) => p.length >= 8)) {
    assert.ok(!message.includes(part) && !challenge.includes(part), 'the answer echoes the token');
  }
}
