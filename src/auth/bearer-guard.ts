// RFC 6750 bearer authentication for one operation, run from an onRequest hook so that it answers before the
// body is read. It returns a result record, never throws: the throttle, rate limits and metrics read it.
import type { FastifyRequest } from 'fastify';
import type { ErrorCode } from '../errors/catalogue.js';
import type { CountedFailure, FailureThrottle } from './failure-throttle.js';
import { looksLikeJwt, type JwtVerification, type JwtVerifier } from './jwt.js';
import type { TokenService, Verification } from './token-service.js';
import type { TicketService, TicketVerification } from './stream-tickets.js';

export const REALM = 'plant-store';

/** One security requirement of the document: all of `scopes` are needed. */
export interface ScopeRequirement {
  scopes: string[];
  /** The scheme: bearerAuth (the default) or eventTicket (a stream ticket in the query, GET /events only). */
  scheme?: string;
}

/** The security scheme of a stream ticket (`?ticket=`). */
export const TICKET_SCHEME = 'eventTicket';

/** Who a verified token speaks for: an opaque token's record or a JWT's identity. */
export interface Principal {
  /** `tok_...` or `jwt_...`: safe for logs, metrics and rate-limit keys. */
  id: string;
  scopes: readonly string[];
  /** When it stops working, where it does (a stream ticket made with it never outlives it). */
  expiresAt?: Date | null;
}

/** Why a request failed authentication or authorization (the label of the metrics counter). */
export type AuthFailureReason =
  | 'duplicate_header' | 'missing' | 'malformed' | 'throttled' | 'unknown' | 'expired' | 'revoked' | 'insufficient_scope'
  | 'jwks_unavailable';

/** A refusal: the catalogue code, the message when it differs from the catalogue's, and the headers to send. */
export interface AuthFailure {
  ok: false;
  reason: AuthFailureReason;
  code: ErrorCode;
  message?: string;
  headers: Record<string, string>;
  /** A throttled address's failure window (the 429's RateLimit fields). */
  window?: CountedFailure;
}

/**
 * The guard's verdict. On success `token` is the verifier's own record (no copy per request), which is a
 * Principal.
 */
export type GuardResult = { ok: true; token: Principal } | AuthFailure;

/** Answers at once (no promise) where nothing has to be waited for: a cached token, a malformed header. */
export type BearerGuard = (request: FastifyRequest) => GuardResult | Promise<GuardResult>;

const BEARER = /^Bearer +([^\s]+) *$/i;

function challenge(params = ''): Record<string, string> {
  return { 'www-authenticate': `Bearer realm="${REALM}"${params}` };
}

function refuse(reason: AuthFailureReason, code: ErrorCode, message: string | undefined, headers: Record<string, string>): AuthFailure {
  return { ok: false, reason, code, message, headers };
}

/** How many Authorization fields a request carries (Node's headers object keeps only the first). */
function authorizationCount(rawHeaders: readonly string[]): number {
  let count = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) if (rawHeaders[i]!.length === 13 && rawHeaders[i]!.toLowerCase() === 'authorization') count++;
  return count;
}

/**
 * The secret of a request's one Authorization field in the Bearer form, when it is an opaque token (not a JWT
 * that `jwt` would verify); undefined for anything the guard would refuse or verify another way.
 */
export function soleOpaqueBearer(rawHeaders: readonly string[], header: string | undefined, jwt: boolean): string | undefined {
  if (header === undefined || authorizationCount(rawHeaders) !== 1) return undefined;
  const secret = BEARER.exec(header)?.[1];
  return secret === undefined || (jwt && looksLikeJwt(secret)) ? undefined : secret;
}

/** Whether `granted` holds every scope of at least one requirement (OpenAPI's alternatives). */
export function satisfies(requirements: readonly ScopeRequirement[], granted: readonly string[]): boolean {
  // A token holds a handful of scopes: includes() beats building a Set on every request.
  return requirements.some((req) => req.scopes.every((s) => granted.includes(s)));
}

/**
 * Builds the guard of one operation. `requirements` are alternatives: a token satisfying any one of them
 * passes (OpenAPI semantics of a security list). `jwt` verifies JWTs from the identity provider, when one is
 * configured; opaque tokens go to `tokens`.
 */
export function bearerGuard(tokens: TokenService, throttle: FailureThrottle, requirements: ScopeRequirement[], jwt?: JwtVerifier, tickets?: TicketService): BearerGuard {
  const takesTicket = tickets !== undefined && requirements.some((r) => r.scheme === TICKET_SCHEME);
  requirements = requirements.filter((r) => r.scheme !== TICKET_SCHEME);

  /** The verdict on a verified (or refused) token: its scopes, or the failure counted against the address. */
  function judged(request: FastifyRequest, result: Verification | JwtVerification): GuardResult | Promise<GuardResult> {
    if (!result.ok) return refused(request, result);
    const granted = result.token.scopes;
    if (!satisfies(requirements, granted)) {
      const scopes = requirements[0]?.scopes ?? [];
      const needed = scopes.join(' ');
      // Where several scopes are needed together, the message names the ones the token lacks.
      const message = scopes.length > 1
        ? `This operation needs the scopes ${scopes.join(' and ')}; the token lacks ${scopes.filter((s) => !granted.includes(s)).join(' and ')}.`
        : `This operation needs the scope ${needed}.`;
      return refuse('insufficient_scope', 'INSUFFICIENT_SCOPE', message, challenge(`, error="insufficient_scope", scope="${needed}"`));
    }
    return result;
  }

  async function refused(request: FastifyRequest, result: Exclude<Verification | JwtVerification | TicketVerification, { ok: true }>, what = 'access token'): Promise<GuardResult> {
    // Verified first: a valid token is never refused for its address's failures (a shared NAT or proxy).
    const counted = await throttle.recordFailure(request.ip);
    if (!counted.allowed) {
      const throttled = refuse('throttled', 'TOO_MANY_AUTH_FAILURES', undefined, { 'retry-after': String(counted.resetS) });
      throttled.window = counted;
      return throttled;
    }
    // Fixed phrases only: nothing of the token is echoed.
    const why = 'description' in result ? result.description : result.reason === 'unknown' ? 'not valid' : result.reason;
    // A ticket's refusal says how to get another: EventSource gives up on it, the page makes a new one.
    const next = what === 'ticket' ? (result.reason === 'revoked' ? ': its token was revoked' : ': make a new one with POST /events/tickets') : '';
    return refuse(result.reason, 'INVALID_TOKEN', `The ${what} is ${why}${next}.`,
      challenge(`, error="invalid_token", error_description="the ${what} is ${why}"`));
  }

  /** A stream ticket in the query, where the operation takes one; refusals that need no lookup. */
  function ticketOf(request: FastifyRequest, ticket: unknown, hasHeader: boolean): GuardResult | Promise<GuardResult> {
    if (!takesTicket) {
      return refuse('malformed', 'UNAUTHENTICATED', 'A stream ticket opens GET /events only: send Authorization: Bearer <token>.', challenge());
    }
    if (hasHeader) {
      return refuse('malformed', 'BAD_REQUEST', 'Send a token in Authorization or a ticket in the query, not both.', {});
    }
    if (typeof ticket !== 'string') return refuse('malformed', 'BAD_REQUEST', 'Send one ticket.', {});
    // A ticket grants reading the feed and nothing else: no scope to judge.
    const verdict = (r: TicketVerification): GuardResult | Promise<GuardResult> => (r.ok ? r : refused(request, r, 'ticket'));
    const result = tickets!.verify(ticket);
    return result instanceof Promise ? result.then(verdict) : verdict(result);
  }

  return function authenticate(request) {
    const query = request.query as { access_token?: unknown; ticket?: unknown } | undefined;
    // RFC 6750's access_token query parameter puts a long-lived secret where logs, history and Referer keep it:
    // never accepted. Without Authorization the request has no credentials (401); beside one it is malformed (400).
    if (query?.access_token !== undefined) {
      const message = 'A token never goes in a URL: send Authorization: Bearer <token>, or, for a browser\'s EventSource, a ticket from POST /events/tickets as ?ticket=.';
      return request.headers.authorization === undefined
        ? refuse('malformed', 'UNAUTHENTICATED', message, challenge())
        : refuse('malformed', 'BAD_REQUEST', message, {});
    }
    if (authorizationCount(request.raw.rawHeaders) > 1) {
      return refuse('duplicate_header', 'BAD_REQUEST', 'Send exactly one Authorization header.',
        challenge(', error="invalid_request", error_description="more than one Authorization header"'));
    }
    const header = request.headers.authorization;
    if (query?.ticket !== undefined) return ticketOf(request, query.ticket, header !== undefined);
    const match = header ? BEARER.exec(header) : null;
    if (!match) {
      // An empty token ("Bearer " arrives trimmed as "Bearer") is a missing token, not a wrong scheme.
      if (!header) return refuse('missing', 'UNAUTHENTICATED', undefined, challenge());
      const message = /^Bearer\s*$/i.test(header)
        ? 'The Bearer token is empty: send Authorization: Bearer <token>.'
        : 'Use the Bearer scheme: Authorization: Bearer <token>.';
      return refuse('malformed', 'UNAUTHENTICATED', message, challenge());
    }
    const result = verifyBearer(tokens, jwt, match[1]!);
    return result instanceof Promise ? result.then((r) => judged(request, r)) : judged(request, result);
  };
}

/** A bearer secret verified by what issued it, told apart by shape: opaque tokens start with pst_, JWTs are three base64url segments. */
function verifyBearer(tokens: TokenService, jwt: JwtVerifier | undefined, secret: string): Verification | JwtVerification | Promise<Verification | JwtVerification> {
  return jwt && looksLikeJwt(secret) ? jwt.verify(secret) : tokens.verify(secret);
}

/**
 * Whether the credential a request was admitted with still verifies: a stream asks at each heartbeat, and ends
 * once its token is revoked or expired, or its ticket expired. Counts no failure against the address.
 */
export function credentialCheck(tokens: TokenService, jwt?: JwtVerifier, tickets?: TicketService): (request: FastifyRequest) => boolean | Promise<boolean> {
  const ok = (r: { ok: boolean }) => r.ok;
  return (request) => {
    const ticket = (request.query as { ticket?: unknown } | undefined)?.ticket;
    let result: { ok: boolean } | Promise<{ ok: boolean }>;
    if (typeof ticket === 'string' && tickets) result = tickets.verify(ticket);
    else {
      const secret = BEARER.exec(request.headers.authorization ?? '')?.[1];
      if (!secret) return false;
      result = verifyBearer(tokens, jwt, secret);
    }
    return result instanceof Promise ? result.then(ok) : result.ok;
  };
}
