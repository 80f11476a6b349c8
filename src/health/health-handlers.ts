// Liveness (the process answers) and readiness (the store answers), for load balancers and orchestrators.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';

export function healthHandlers(store: { ping(): Promise<void> }) {
  return {
    async getHealth() {
      return { status: 'ok' as const };
    },
    async getReadiness(request: FastifyRequest, _reply: FastifyReply) {
      try {
        await store.ping();
      } catch (err) {
        request.log.warn({ err }, 'readiness check failed');
        throw new AppError('STORE_UNAVAILABLE', 'The store is not reachable.');
      }
      return { status: 'ok' as const };
    },
  };
}
