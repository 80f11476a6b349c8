// The security hook of an operation: runs the bearer guard, and reads its result for the rate limits (the
// per-address failure throttle's 429 gains its RateLimit fields from the guard's refusal; an authenticated
// request counts against its token, whatever verified it) and for the failure metrics. A refusal leaves as the catalogue's error.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AuthFailureReason, BearerGuard, GuardResult, Principal } from '../auth/bearer-guard.js';
import { AppError } from '../errors/catalogue.js';
import { rateLimitHeaders, type WindowState } from './fixed-window.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set once the bearer token is verified. */
    tokenId?: string;
    /** Who the verified token speaks for (POST /events/tickets makes a ticket for it). */
    principal?: Principal;
  }
}

/** An onRequest hook in Fastify's callback form: an async hook cost every request its promises. */
type Hook = (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => void;

/**
 * Counts requests per key: fixed-window.ts's limiter, or a worker's share of a multi-process server's count
 * (shared-limits.ts), which answers with a promise only while it waits for the primary.
 */
/** A request refused by bearer authentication: the guard's part of the process's observations. */
export interface AuthObservation {
  kind: 'auth-failure';
  reason: AuthFailureReason;
}

export interface RequestCounter {
  hit(key: string): (WindowState & { allowed: boolean }) | Promise<WindowState & { allowed: boolean }>;
}

export interface RateLimits {
  /** Requests per token and window; undefined when RATE_LIMIT=off. */
  perToken?: RequestCounter;
  /** Told the reason of every refusal (metrics). */
  observe?: (observation: AuthObservation) => void;
}

/** A request's count against its token, as a RequestCounter gave it. */
export type TokenCount = ReturnType<RequestCounter['hit']>;

const kCounted = Symbol('plant-store request counted against its token');

/**
 * Notes that `raw` was already counted against its token, by a path that then handed it to the app
 * (read-lane.ts):  the guard takes this count rather than counting the request twice.
 */
export function noteCounted(raw: object, count: TokenCount): void {
  (raw as { [kCounted]?: TokenCount })[kCounted] = count;
}

export function withRateLimits(guard: BearerGuard, limits: RateLimits): Hook {
  const { perToken, observe } = limits;

  /** Counts an authenticated request against its token, or refuses it; undefined when it may go on. */
  function admitted(result: GuardResult, request: FastifyRequest, reply: FastifyReply): AppError | undefined | Promise<AppError | undefined> {
    if (!result.ok) {
      // The observer list keeps a failing subscriber from changing the answer.
      observe?.({ kind: 'auth-failure', reason: result.reason });
      const headers = result.window ? { ...rateLimitHeaders('auth-failures', result.window), ...result.headers } : result.headers;
      // A refusal waits for the end of the parser's turn, as it always has: a request that also breaks HTTP
      // further on (a bad chunk) is answered 400 for that, on the connection, before the refusal could be.
      return Promise.resolve(new AppError(result.code, result.message, { headers }));
    }
    const tokenId = result.token.id;
    request.tokenId = tokenId;
    request.principal = result.token;
    if (!perToken) return undefined;
    const state = (request.raw as { [kCounted]?: TokenCount })[kCounted] ?? perToken.hit(tokenId);
    return state instanceof Promise ? state.then((s) => counted(s, reply)) : counted(state, reply);
  }

  function counted(state: WindowState & { allowed: boolean }, reply: FastifyReply): AppError | undefined | Promise<AppError> {
    const headers = rateLimitHeaders('token', state);
    // After the parser's turn, as every refusal (above).
    if (!state.allowed) return Promise.resolve(new AppError('RATE_LIMITED', undefined, { headers: { ...headers, 'retry-after': String(state.resetS) } }));
    // On every answer to this request, success or error, so clients can pace themselves before a 429.
    reply.header('ratelimit-policy', headers['ratelimit-policy']).header('ratelimit', headers.ratelimit);
    return undefined;
  }

  // Nothing is waited for on the common path (a cached token, this process's counter): the hook calls done at once.
  return function rateLimited(request, reply, done) {
    let outcome: AppError | undefined | Promise<AppError | undefined>;
    try {
      const result = guard(request);
      outcome = result instanceof Promise ? result.then((r) => admitted(r, request, reply)) : admitted(result, request, reply);
    } catch (err) {
      done(err as Error);
      return;
    }
    if (outcome instanceof Promise) outcome.then((err) => done(err), done);
    else done(outcome);
  };
}
