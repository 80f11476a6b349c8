// The work of the floor of GET /plants/{id} (issue 31), shared by floor-http.mjs (bare node:http, the floor) and
// floor-fastify.mjs (the same work in a Fastify route): exactly the work plant-store's answer needs and
// nothing else (no framework, validator, access log or metrics). On a plant-store database file (DATABASE_FILE,
// migrated and seeded by the plant-store CLI: lib/servers.mjs), with the serving connection's pragmas, it
// - checks the bearer as src/auth does: one Authorization header, the Bearer form, the token's shape, SHA-256
//   hex of it looked up in a cache of api_tokens rows that a miss or a 2 s old entry reads again (the token
//   service's TOKEN_CACHE_TTL_MS), revocation, expiry, the plants:read scope, the last use noted in memory;
// - counts the request against the token's fixed window (RATE_LIMIT_PER_TOKEN per 60 s) for the RateLimit fields;
// - reads the plant by id with the service's statement, int64 exact (safeIntegers), written digit for digit;
// - sends the headers plant-store sends on that answer: the security headers and API policy, X-Request-Id (the
//   caller's when sane, else a UUID), Cache-Control, RateLimit-Policy and RateLimit, ETag of the version, and
//   the content type. A missing plant is plant-store's 404 body. Only GET by id is answered here (seeding is
//   done on the file before start, by plant-store import); floor-http.mjs hands POST /plants to
//   floor-create.mjs, which uses the bearer check, the count and the headers exported here. Everything else is 404.
import { createRequire } from 'node:module';
import { hash, randomUUID } from 'node:crypto';

const Database = createRequire(new URL('../../package.json', import.meta.url))('better-sqlite3');
const db = new Database(process.env.DATABASE_FILE, { timeout: 5_000 });
// The service's serving connection: src/storage/sqlite/connection-setup.ts, then query_only (it writes elsewhere).
db.pragma('journal_mode = WAL');
db.pragma('synchronous = FULL');
db.pragma('foreign_keys = ON');
db.pragma('query_only = ON');
const getPlant = db.prepare('SELECT id, name, tag, version FROM plants WHERE id = ?').safeIntegers(true);
const tokenByHash = db.prepare('SELECT * FROM api_tokens WHERE token_hash = ?');

const TOKEN_TTL_MS = 2_000;
const LIMIT = Number(process.env.RATE_LIMIT_PER_TOKEN ?? 60_000);
const WINDOW_MS = 60_000;
const BEARER = /^Bearer +([^\s]+) *$/i;
const TOKEN_SHAPE = /^pst_[A-Za-z0-9_-]{43}$/;
const REQUEST_ID = /^[\w.:@/+=-]{1,128}$/;
const PLANT_PATH = /^\/plants\/(-?\d{1,19})$/;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

const tokens = new Map();
const lastUsed = new Map();
const windows = new Map();

/** The token's cached row when `secret` names a live token, its last use noted; undefined otherwise. */
export function verify(secret, now) {
  if (!TOKEN_SHAPE.test(secret)) return undefined;
  const key = hash('sha256', secret, 'hex');
  let hit = tokens.get(key);
  if (!hit || hit.until <= now) {
    const row = tokenByHash.get(key);
    if (!row) return undefined;
    hit = { id: row.id, scopes: row.scopes.split(' '), expiresAt: row.expires_at, revokedAt: row.revoked_at, until: now + TOKEN_TTL_MS };
    tokens.set(key, hit);
  }
  if (hit.revokedAt !== null || (hit.expiresAt !== null && hit.expiresAt <= now)) return undefined;
  lastUsed.set(hit.id, now);
  return hit;
}

/** The token a request's one Authorization header carries in the Bearer form, verified; undefined otherwise. */
export function bearerToken(headers, rawHeaders, now) {
  let count = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) if (rawHeaders[i].length === 13 && rawHeaders[i].toLowerCase() === 'authorization') count++;
  const bearer = count === 1 ? BEARER.exec(headers.authorization) : null;
  return bearer ? verify(bearer[1], now) : undefined;
}

/** The caller's X-Request-Id when sane, else a UUID. */
export function requestIdOf(headers) {
  const given = headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
}

/** The token's RateLimit field after counting this request, or undefined when its window's quota is used up. */
export function countRequest(tokenId, now) {
  let w = windows.get(tokenId);
  if (!w || now - w.start >= WINDOW_MS) windows.set(tokenId, (w = { start: now, count: 0 }));
  if (w.count >= LIMIT) return undefined;
  w.count++;
  return `"token";r=${LIMIT - w.count};t=${Math.max(1, Math.ceil((w.start + WINDOW_MS - now) / 1000))}`;
}

/** If-None-Match (weak comparison) names the plant's current tag. */
function notModified(field, etag) {
  return field.trim() === '*' || field.split(',').some((t) => t.trim().replace(/^W\//, '') === etag);
}

export const POLICY = `"token";q=${LIMIT};w=${WINDOW_MS / 1000}`;
export const FIXED = [
  'x-content-type-options', 'nosniff',
  'referrer-policy', 'no-referrer',
  'x-frame-options', 'DENY',
  'cross-origin-resource-policy', 'same-origin',
  'content-security-policy', "default-src 'none'; frame-ancestors 'none'",
];

function answer(status, requestId, rateLimit, etag, body) {
  const headers = [...FIXED, 'x-request-id', requestId, 'cache-control', 'no-store'];
  if (rateLimit !== undefined) headers.push('ratelimit-policy', POLICY, 'ratelimit', rateLimit);
  if (etag !== undefined) headers.push('etag', etag);
  if (status !== 304) headers.push('content-type', 'application/json; charset=utf-8', 'content-length', String(Buffer.byteLength(body)));
  return { status, headers, body };
}

export function refused(requestId, status, message, extra = []) {
  const body = JSON.stringify({ error: status, message });
  return { status, headers: [...FIXED, 'x-request-id', requestId, 'cache-control', 'no-store', ...extra,
    'content-type', 'application/json; charset=utf-8', 'content-length', String(Buffer.byteLength(body))], body };
}

/** The answer to one request as { status, headers (a flat list of names and values), body }. */
export function answerRequest(method, url, headers, rawHeaders) {
  const requestId = requestIdOf(headers);
  const m = method === 'GET' ? PLANT_PATH.exec(url) : null;
  if (!m) return refused(requestId, 404, `No route ${method} ${url}.`);
  const now = Date.now();
  const token = bearerToken(headers, rawHeaders, now);
  if (!token || !token.scopes.includes('plants:read')) return refused(requestId, 401, 'The access token is not valid.', ['www-authenticate', 'Bearer realm="plant-store", error="invalid_token"']);
  const rateLimit = countRequest(token.id, now);
  if (rateLimit === undefined) return refused(requestId, 429, 'Too many requests for this token.', ['ratelimit-policy', POLICY]);
  const id = BigInt(m[1]);
  if (id < INT64_MIN || id > INT64_MAX) return refused(requestId, 400, 'path/id must be an int64.');
  const row = getPlant.get(id);
  if (!row) return answer(404, requestId, rateLimit, undefined, `{"error":404,"message":"No plant with id ${id}."}`);
  const etag = `"${row.version}"`;
  const unless = headers['if-none-match'];
  if (unless !== undefined && notModified(unless, etag)) return answer(304, requestId, rateLimit, etag, '');
  const body = row.tag === null
    ? `{"id":${row.id},"name":${JSON.stringify(row.name)}}`
    : `{"id":${row.id},"name":${JSON.stringify(row.name)},"tag":${JSON.stringify(row.tag)}}`;
  return answer(200, requestId, rateLimit, etag, body);
}

// An orderly exit on the bench's SIGTERM, so that --cpu-prof writes its profile.
process.on('SIGTERM', () => process.exit(0));
