// RFC 6750 bearer authentication as a Fastify onRequest hook, so it runs before the body is read.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';
import type { FailureThrottle } from './failure-throttle.js';
import { looksLikeJwt, type JwtVerifier } from './jwt-verifier.js';
import type { TokenService } from './token-service.js';

export const REALM = 'plant-store';

/** One security requirement of the document: all of `scopes` are needed. */
export interface ScopeRequirement {
  scopes: string[];
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set once the bearer token is verified. */
    tokenId?: string;
  }
}

const BEARER = /^Bearer +([^\s]+) *$/i;

function challenge(params = ''): Record<string, string> {
  return { 'www-authenticate': `Bearer realm="${REALM}"${params}` };
}

/**
 * Builds the hook for one operation. `requirements` are alternatives: a token satisfying any one of them
 * passes (OpenAPI semantics of a security list).
 */
/** Why a request failed authentication or authorization (the label of the metrics counter). */
export type AuthFailureReason =
  | 'duplicate_header' | 'missing' | 'malformed' | 'throttled' | 'unknown' | 'expired' | 'revoked' | 'insufficient_scope'
  | 'jwks_unavailable';

export function bearerGuard(
  tokens: TokenService,
  throttle: FailureThrottle,
  requirements: ScopeRequirement[],
  onFailure?: (reason: AuthFailureReason) => void,
  /** Verifies JWTs from the identity provider, when one is configured; opaque tokens go to `tokens`. */
  jwt?: JwtVerifier,
) {
  return async function authenticate(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    try {
      await check(request, reply);
    } catch (err) {
      if (onFailure && err instanceof AppError) {
        try {
          onFailure(reasonOf(err, request));
        } catch {
          // An observer never changes the answer.
        }
      }
      throw err;
    }
  };

  async function check(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
    const raw = request.raw.rawHeaders;
    let count = 0;
    for (let i = 0; i < raw.length; i += 2) if (raw[i]!.length === 13 && raw[i]!.toLowerCase() === 'authorization') count++;
    if (count > 1) {
      throw new AppError('BAD_REQUEST', 'Send exactly one Authorization header.', {
        headers: challenge(', error="invalid_request", error_description="more than one Authorization header"'),
      });
    }
    const header = request.headers.authorization;
    const match = header ? BEARER.exec(header) : null;
    if (!match) {
      // An empty token ("Bearer " arrives trimmed as "Bearer") is a missing token, not a wrong scheme.
      const message = !header ? undefined
        : /^Bearer\s*$/i.test(header) ? 'The Bearer token is empty: send Authorization: Bearer <token>.'
        : 'Use the Bearer scheme: Authorization: Bearer <token>.';
      throw new AppError('UNAUTHENTICATED', message, { headers: challenge() });
    }
    const wait = throttle.blockedFor(request.ip);
    if (wait > 0) throw new AppError('TOO_MANY_AUTH_FAILURES', undefined, { headers: { 'retry-after': String(wait) } });

    // Told apart by shape: opaque tokens start with pst_, JWTs are three base64url segments.
    const secret = match[1]!;
    const result = jwt && looksLikeJwt(secret) ? await jwt.verify(secret) : await tokens.verify(secret);
    if (!result.ok) {
      markReason(request, result.reason);
      throttle.recordFailure(request.ip);
      // Fixed phrases only: nothing of the token is echoed.
      const why = 'description' in result ? result.description : result.reason === 'unknown' ? 'not valid' : result.reason;
      throw new AppError('INVALID_TOKEN', `The access token is ${why}.`, {
        headers: challenge(`, error="invalid_token", error_description="the access token is ${why}"`),
      });
    }
    // A token holds a handful of scopes: includes() beats building a Set on every request.
    const granted = result.token.scopes;
    if (!requirements.some((req) => req.scopes.every((s) => granted.includes(s)))) {
      const needed = requirements[0]?.scopes.join(' ') ?? '';
      throw new AppError('INSUFFICIENT_SCOPE', `This operation needs the scope ${needed}.`, {
        headers: challenge(`, error="insufficient_scope", scope="${needed}"`),
      });
    }
    request.tokenId = result.token.id;
  }
}

const FAILURE_REASON = Symbol('authFailureReason');

function reasonOf(err: AppError, request: FastifyRequest): AuthFailureReason {
  const given = (request as unknown as Record<symbol, AuthFailureReason | undefined>)[FAILURE_REASON];
  if (given) return given;
  switch (err.code) {
    case 'BAD_REQUEST': return 'duplicate_header';
    case 'TOO_MANY_AUTH_FAILURES': return 'throttled';
    case 'INSUFFICIENT_SCOPE': return 'insufficient_scope';
    case 'INVALID_TOKEN': return 'unknown';
    default: return request.headers.authorization ? 'malformed' : 'missing';
  }
}

function markReason(request: FastifyRequest, reason: AuthFailureReason): void {
  (request as unknown as Record<symbol, AuthFailureReason>)[FAILURE_REASON] = reason;
}
