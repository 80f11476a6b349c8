// Liveness (the process answers) and readiness (the store answers), for load balancers and orchestrators, and
// the service's front door (GET /), which points a newcomer at the docs page and the document.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors/catalogue.js';
import { VERSION } from './version.js';

const ROOT = Object.freeze({
  service: 'plant-store',
  version: VERSION,
  links: Object.freeze({ docs: '/docs', openapi: '/openapi.json', health: '/healthz' }),
});

export function healthHandlers(store: { ping(): Promise<void> }) {
  return {
    async getRoot() {
      return ROOT;
    },
    async getHealth() {
      return { status: 'ok' as const, version: VERSION };
    },
    async getReadiness(request: FastifyRequest, _reply: FastifyReply) {
      try {
        await store.ping();
      } catch (err) {
        request.log.warn({ err }, 'readiness check failed');
        throw new AppError('STORE_UNAVAILABLE', 'The store is not reachable.');
      }
      return { status: 'ok' as const, version: VERSION };
    },
  };
}
