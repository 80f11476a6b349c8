// Rate limits around the bearer guard: the per-address failure throttle's 429 gains the RateLimit fields,
// and an authenticated request counts against its token (request.tokenId), whatever verified it.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FailureThrottle } from '../auth/failure-throttle.js';
import { AppError } from '../errors.js';
import { rateLimitHeaders, type FixedWindowLimiter } from './fixed-window.js';

type Hook = (request: FastifyRequest, reply: FastifyReply) => Promise<void>;

export function withRateLimits(authenticate: Hook, throttle: FailureThrottle, perToken: FixedWindowLimiter | undefined): Hook {
  return async function rateLimited(request, reply) {
    try {
      await authenticate(request, reply);
    } catch (err) {
      if (err instanceof AppError && err.code === 'TOO_MANY_AUTH_FAILURES') {
        throw new AppError(err.code, err.message, { headers: { ...throttle.headers(request.ip), ...err.headers } });
      }
      throw err;
    }
    if (!perToken || request.tokenId === undefined) return;
    const state = perToken.hit(request.tokenId);
    const headers = rateLimitHeaders('token', state);
    if (!state.allowed) throw new AppError('RATE_LIMITED', undefined, { headers: { ...headers, 'retry-after': String(state.resetS) } });
    // On every answer to this request, success or error, so clients can pace themselves before a 429.
    reply.header('ratelimit-policy', headers['ratelimit-policy']).header('ratelimit', headers.ratelimit);
  };
}
