// Opaque API tokens: how they look, how they are hashed, and the scopes they can carry.
import * as crypto from 'node:crypto';

/**
 * Every scope the service knows. Operations name theirs in the OpenAPI document's security requirements.
 * `tokens:manage` lists, creates and revokes tokens over HTTP, and never grants a scope its token lacks.
 */
export const SCOPES = ['plants:read', 'plants:write', 'webhooks:manage', 'metrics:read', 'tokens:manage'] as const;
export type Scope = (typeof SCOPES)[number];

/** A recognisable prefix lets secret scanners and humans spot a leaked token. */
export const TOKEN_PREFIX = 'pst_';
const SECRET_BYTES = 32; // 256 random bits
const TOKEN_SHAPE = /^pst_[A-Za-z0-9_-]{43}$/;

export function generateSecret(): string {
  return TOKEN_PREFIX + crypto.randomBytes(SECRET_BYTES).toString('base64url');
}

export function generateTokenId(): string {
  return 'tok_' + crypto.randomBytes(9).toString('base64url');
}

/**
 * Only this hash is stored; a 256-bit random secret needs no salt or slow hash. crypto.hash is one native call,
 * about 3x faster than a Hash object per call, and every authenticated request hashes its token.
 */
export function hashSecret(secret: string): string {
  return crypto.hash('sha256', secret, 'hex');
}

export function looksLikeToken(secret: string): boolean {
  return TOKEN_SHAPE.test(secret);
}

/** Constant-time equality of two hex digests of equal length. */
export function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && crypto.timingSafeEqual(x, y);
}

export function parseScopes(list: string): Scope[] {
  const scopes = list.split(/[\s,]+/).filter(Boolean);
  const unknown = scopes.filter((s) => !(SCOPES as readonly string[]).includes(s));
  if (unknown.length > 0) throw new Error(`unknown scope ${unknown.join(', ')}; known scopes: ${SCOPES.join(', ')}`);
  if (scopes.length === 0) throw new Error(`at least one scope is needed: ${SCOPES.join(', ')}`);
  return [...new Set(scopes)] as Scope[];
}

const UNIT_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000, y: 31_536_000_000 };

const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const ISO_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})$/i;

/**
 * An ISO 8601 date (`2031-01-31`, midnight UTC) or date-time with a zone (`2031-01-31T12:00:00Z`). Anything
 * else is refused: `new Date` alone accepts "1/2/2031" (which day?), "12" (the year 2001) and 2031-02-30
 * (silently March 2), and reads a date-time without a zone in whatever zone the machine is in.
 */
function parseIsoDate(value: string): Date | undefined {
  const m = ISO_DATE.exec(value) ?? ISO_DATE_TIME.exec(value);
  if (!m) return undefined;
  const at = new Date(value);
  if (Number.isNaN(at.getTime())) return undefined;
  // The calendar date must exist: Date rolls 2031-02-30 over to March instead of failing.
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const check = new Date(Date.UTC(year, month - 1, day));
  if (check.getUTCFullYear() !== year || check.getUTCMonth() !== month - 1 || check.getUTCDate() !== day) return undefined;
  return at;
}

/** `30d`, `12h`, `90m` or an ISO 8601 date; the moment the token stops working. */
export function parseExpiry(value: string, now: Date): Date {
  const text = value.trim();
  const m = /^(\d+)\s*([smhdwy])$/.exec(text);
  const at = m ? new Date(now.getTime() + Number(m[1]) * UNIT_MS[m[2]!]!) : parseIsoDate(text);
  if (!at || Number.isNaN(at.getTime())) {
    throw new Error(`not a duration (30d, 12h, 90m) or an ISO 8601 date (2031-01-31, 2031-01-31T12:00:00Z): "${value}"`);
  }
  if (at.getTime() <= now.getTime()) throw new Error(`expiry must be in the future: "${value}"`);
  return at;
}
