// JWT bearer tokens from an external identity provider: signature with a pinned key and algorithm list,
// exp/nbf with a clock skew, iss/aud when configured, scopes from `scope` or `scp`. The token itself is
// never kept or logged; it is known by a hash of its issuer and subject.
import { createHash } from 'node:crypto';
import { errors, jwtVerify, type CryptoKey, type JWTPayload, type JWTVerifyGetKey, type JWTVerifyOptions } from 'jose';
import { systemClock, type Clock } from '../kit/clock.js';
import type { JwtIdentity, JwtKeySource, JwtVerification, JwtVerifier } from './jwt.js';
import { createJwksSource, JwksUnavailableError } from './jwks-source.js';
import { algorithmsForKey, HMAC_ALGORITHMS, JWKS_ALGORITHMS, MIN_HMAC_SECRET_BYTES, parsePublicKeyPem } from './jwt-keys.js';
import { SCOPES } from './tokens.js';


export interface JwtVerifierOptions {
  key: JwtKeySource;
  issuer?: string;
  /** The token's `aud` must name one of these, when any are given. */
  audience?: readonly string[];
  clockSkewMs: number;
  /** How long a verified token is remembered (never past its `exp`); 0 turns the cache off. */
  cacheTtlMs: number;
  cacheSize?: number;
  /** A JWKS fetch failed (the IdP is down or answers nonsense). */
  onJwksError?: (err: Error) => void;
  /** Verification failed for a reason that is not one of jose's: a bug, or input nobody foresaw. */
  onUnexpectedError?: (err: unknown) => void;
  /** Time for exp, nbf and iat, the cache and the key set's age and cooldown. */
  clock?: Clock;
}


const KNOWN_SCOPES: ReadonlySet<string> = new Set(SCOPES);
/** Keys tried at most when several in the JWKS fit a token (no `kid`, or a reused one). */
const MAX_CANDIDATE_KEYS = 8;

export function createJwtVerifier(options: JwtVerifierOptions): JwtVerifier {
  const clock = options.clock ?? systemClock;
  const { getKey, algorithms } = resolveKey(options, clock);
  const verifyOptions = {
    algorithms,
    issuer: options.issuer,
    audience: options.audience && options.audience.length > 0 ? [...options.audience] : undefined,
    clockTolerance: options.clockSkewMs / 1000,
    requiredClaims: ['exp', 'sub'],
  };
  const cacheSize = options.cacheSize ?? 10_000;
  const cache = new Map<string, { token: JwtIdentity; until: number }>();

  async function check(token: string, now: number): Promise<JWTPayload> {
    // jose reads the time for the claims from here only.
    const options: JWTVerifyOptions = { ...verifyOptions, currentDate: new Date(now) };
    try {
      return (await jwtVerify(token, getKey, options)).payload;
    } catch (err) {
      if (!(err instanceof errors.JWKSMultipleMatchingKeys)) throw err;
      // jose leaves the choice among several fitting keys to the caller: the one that verifies wins.
      let tried = 0;
      for await (const candidate of err as unknown as AsyncIterable<CryptoKey>) {
        if (++tried > MAX_CANDIDATE_KEYS) break;
        try {
          return (await jwtVerify(token, candidate, options)).payload;
        } catch (inner) {
          if (!(inner instanceof errors.JWSSignatureVerificationFailed)) throw inner;
        }
      }
      throw new errors.JWSSignatureVerificationFailed();
    }
  }

  return {
    async verify(token) {
      const hash = createHash('sha256').update(token, 'utf8').digest('base64url');
      const now = clock.now();
      const hit = cache.get(hash);
      if (hit && hit.until > now) return { ok: true, token: hit.token };
      if (hit) cache.delete(hash);

      let payload: JWTPayload;
      try {
        payload = await check(token, now);
      } catch (err) {
        const failure = failureOf(err);
        if (!failure) options.onUnexpectedError?.(err);
        return { ok: false, ...(failure ?? { reason: 'unknown', description: 'not valid: it could not be verified' }) };
      }
      // jose checks that sub is present and, only when an issuer is configured, what iss is; the id needs both as strings.
      if (typeof payload.sub !== 'string' || payload.sub === '') return { ok: false, reason: 'unknown', description: 'not valid: the sub claim is missing or wrong' };
      if (payload.iss !== undefined && typeof payload.iss !== 'string') return { ok: false, reason: 'unknown', description: 'not valid: the iss claim is missing or wrong' };
      const scopes = scopesOf(payload);
      if (!scopes) return { ok: false, reason: 'unknown', description: 'not valid: its scope claim is not a string or a list of strings' };
      const identity: JwtIdentity = { id: identityOf(payload), scopes, expiresAt: new Date(payload.exp! * 1000) };
      // `exp` is required, so the entry always has an end; a token is never trusted past it.
      const until = Math.min(now + options.cacheTtlMs, payload.exp! * 1000);
      if (options.cacheTtlMs > 0 && until > now) {
        if (cache.size >= cacheSize) cache.delete(cache.keys().next().value as string);
        cache.set(hash, { token: identity, until });
      }
      return { ok: true, token: identity };
    },
  };
}

/** One key-lookup path for every source; a fixed key is simply the answer for every token. */
function resolveKey(options: JwtVerifierOptions, clock: Clock): { getKey: JWTVerifyGetKey; algorithms: string[] } {
  const source = options.key;
  switch (source.kind) {
    case 'jwks':
      return {
        getKey: createJwksSource({ ...source, url: new URL(source.url), onFetchError: options.onJwksError, clock }),
        algorithms: [...JWKS_ALGORITHMS],
      };
    case 'pem': {
      const key = parsePublicKeyPem(source.pem);
      return { getKey: async () => key, algorithms: algorithmsForKey(key) };
    }
    case 'hmac': {
      const secret = new TextEncoder().encode(source.secret);
      if (secret.byteLength < MIN_HMAC_SECRET_BYTES) throw new Error(`an HS256 secret needs at least ${MIN_HMAC_SECRET_BYTES} bytes`);
      return { getKey: async () => secret, algorithms: [...HMAC_ALGORITHMS] };
    }
  }
}

/**
 * The granted scopes: the space-separated `scope` claim (RFC 8693) and/or `scp` (a list or a string, as
 * Okta and Entra ID send it), intersected with the scopes this service knows. Undefined when malformed.
 */
export function scopesOf(payload: JWTPayload): string[] | undefined {
  const granted = new Set<string>();
  for (const claim of [payload.scope, payload.scp]) {
    if (claim === undefined) continue;
    const list = typeof claim === 'string' ? claim.split(' ') : Array.isArray(claim) && claim.every((s) => typeof s === 'string') ? (claim as string[]) : undefined;
    if (!list) return undefined;
    for (const s of list) if (KNOWN_SCOPES.has(s)) granted.add(s);
  }
  return [...granted];
}

/** A stable id per subject of an issuer; the JSON array keeps ("a", "bc") and ("ab", "c") apart. */
function identityOf(payload: JWTPayload): string {
  return 'jwt_' + createHash('sha256').update(JSON.stringify([payload.iss ?? null, payload.sub ?? null])).digest('base64url').slice(0, 22);
}

const CLAIM_PROBLEMS: Record<string, string> = {
  nbf: 'not valid yet',
  aud: 'not valid: wrong audience',
  iss: 'not valid: wrong issuer',
  iat: 'not valid: issued in the future',
};

/**
 * Why a token failed, in words fit for a client (fixed phrases: nothing from the token is echoed);
 * undefined for an error that is not jose's verdict on the token.
 */
function failureOf(err: unknown): { reason: 'expired' | 'unknown' | 'jwks_unavailable'; description: string } | undefined {
  const invalid = (why: string) => ({ reason: 'unknown' as const, description: `not valid: ${why}` });
  if (err instanceof errors.JWTExpired) return { reason: 'expired', description: 'expired' };
  if (err instanceof JwksUnavailableError) return { reason: 'jwks_unavailable', description: "not verifiable now: the identity provider's keys are unavailable" };
  if (err instanceof errors.JWTClaimValidationFailed) {
    const known = CLAIM_PROBLEMS[err.claim];
    if (known) return { reason: 'unknown', description: known };
    return invalid(/^[a-z]{1,16}$/.test(err.claim) ? `the ${err.claim} claim is missing or wrong` : 'a claim is missing or wrong');
  }
  if (err instanceof errors.JOSEAlgNotAllowed) return invalid('its algorithm is not accepted');
  if (err instanceof errors.JWSSignatureVerificationFailed) return invalid('bad signature');
  if (err instanceof errors.JWKSNoMatchingKey) return invalid('no known key matches it');
  if (err instanceof errors.JOSENotSupported) return invalid('its algorithm is not supported');
  if (err instanceof errors.JWSInvalid || err instanceof errors.JWTInvalid) return invalid('malformed');
  if (err instanceof errors.JOSEError) return invalid('it could not be verified');
  return undefined;
}
