// The JWT settings (config.ts joins them): where the key that signs accepted JWTs comes from, the claims they
// must carry, and the fetching of a JWKS. A parse throws an Error saying what is wrong with the value.
import { readFileSync } from 'node:fs';
import { integer, type SettingRows } from '../kit/settings.js';
import { keyFingerprint, MIN_HMAC_SECRET_BYTES, parsePublicKeyPem } from './jwt-keys.js';

export interface JwtSettings {
  /** JWT key source, at most one of the three ('' when unset): the IdP's JWKS URL, a PEM public key, an HS256 secret. */
  readonly jwtJwksUrl: string;
  readonly jwtPublicKey: string;
  readonly jwtHs256Secret: string;
  /** Required `iss` of JWTs ('' accepts any). */
  readonly jwtIssuer: string;
  /** JWTs must name one of these in `aud` (empty accepts any). */
  readonly jwtAudience: readonly string[];
  /** Leeway for `exp` and `nbf` against clock differences with the IdP. */
  readonly jwtClockSkewMs: number;
  /** Deadline of one JWKS fetch. */
  readonly jwtJwksTimeoutMs: number;
  /** Least time between JWKS refetches caused by unknown key ids. */
  readonly jwtJwksCooldownMs: number;
}

/** An https URL, or http to a loopback host (a JWKS over plain http to another host could be swapped in transit). */
function jwksUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new Error(`not a URL: "${raw}"`);
  }
  const loopback = ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname) || /^127\./.test(url.hostname);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) {
    throw new Error(`expected an https URL (http only to localhost), got "${url.origin}"`);
  }
  if (url.username || url.password) throw new Error('the URL must not carry credentials');
  return url.href;
}

/** A PEM public key given inline (\n escapes allowed, for one-line env files) or as the path of a file holding it. */
function publicKeyPem(raw: string): string {
  let pem = raw.replace(/\\n/g, '\n').trim();
  if (!pem.startsWith('-----BEGIN')) {
    try {
      pem = readFileSync(raw.trim(), 'utf8').trim();
    } catch (err) {
      throw new Error(`neither a PEM key nor a readable file: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  }
  parsePublicKeyPem(pem);
  return pem;
}

function hmacSecret(raw: string): string {
  const bytes = Buffer.byteLength(raw, 'utf8');
  if (bytes < MIN_HMAC_SECRET_BYTES) {
    throw new Error(`an HS256 secret needs at least ${MIN_HMAC_SECRET_BYTES} bytes, this one has ${bytes} (generate one with: openssl rand -base64 48)`);
  }
  return raw;
}

export const JWT_SETTINGS: SettingRows<JwtSettings> = [
  { key: 'jwtJwksUrl', env: 'JWT_JWKS_URL', description: "Accept JWTs signed by a key of this JWKS (the IdP's jwks_uri; https, or http to localhost)", default: '', parse: jwksUrl },
  { key: 'jwtPublicKey', env: 'JWT_PUBLIC_KEY', description: 'Accept JWTs signed with this PEM public key (RSA, EC or Ed25519), given inline or as a file path', default: '', parse: publicKeyPem,
    show: (pem) => (pem ? keyFingerprint(parsePublicKeyPem(pem)) : '') },
  { key: 'jwtHs256Secret', env: 'JWT_HS256_SECRET', description: `Accept HS256 JWTs made with this shared secret (at least ${MIN_HMAC_SECRET_BYTES} bytes)`, default: '', secret: true, parse: hmacSecret,
    show: (secret) => (secret ? '****' : '') },
  { key: 'jwtIssuer', env: 'JWT_ISSUER', description: 'JWTs must carry exactly this iss claim (empty: any issuer)', default: '', parse: (raw) => raw.trim() },
  { key: 'jwtAudience', env: 'JWT_AUDIENCE', description: 'Comma-separated audiences; a JWT\'s aud must name one of them (empty: any audience)', default: [],
    parse: (raw) => Object.freeze(raw.split(',').map((a) => a.trim()).filter(Boolean)) },
  { key: 'jwtClockSkewMs', env: 'JWT_CLOCK_SKEW_MS', description: 'Leeway for the exp and nbf claims of JWTs', default: 30_000, parse: integer(0, 300_000) },
  { key: 'jwtJwksTimeoutMs', env: 'JWT_JWKS_TIMEOUT_MS', description: 'Deadline of one JWKS fetch', default: 5_000, parse: integer(100, 60_000) },
  { key: 'jwtJwksCooldownMs', env: 'JWT_JWKS_COOLDOWN_MS', description: 'Least time between JWKS refetches caused by unknown key ids', default: 30_000, parse: integer(1_000, 3_600_000) },
];

/** JWT settings that only make sense together. */
export function jwtProblems(c: JwtSettings): string[] {
  const sources = [c.jwtJwksUrl && 'JWT_JWKS_URL', c.jwtPublicKey && 'JWT_PUBLIC_KEY', c.jwtHs256Secret && 'JWT_HS256_SECRET'].filter(Boolean);
  if (sources.length > 1) return [`${sources.join(', ')}: set at most one JWT key source`];
  if (sources.length === 0) {
    const stray = [c.jwtIssuer && 'JWT_ISSUER', c.jwtAudience.length > 0 && 'JWT_AUDIENCE'].filter(Boolean);
    if (stray.length > 0) return [`${stray.join(', ')}: set JWT_JWKS_URL, JWT_PUBLIC_KEY or JWT_HS256_SECRET too (JWTs are off without a key)`];
  }
  return [];
}
