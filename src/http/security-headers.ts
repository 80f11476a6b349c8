// Security headers on every answer, and CORS for the origins CORS_ORIGINS names (none by default).
// Written by hand rather than with @fastify/helmet and @fastify/cors: a dozen fixed headers and an exact-origin
// list need no dependency, and a global helmet CSP would have to be kept away from the /docs page's own policy.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { Contract } from './contract.js';

/**
 * Sent on every response. No Strict-Transport-Security: the service speaks plain HTTP and TLS is terminated
 * in front of it; the terminator knows the host names and their HSTS policy, and sets the header (SECURITY.md).
 */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-resource-policy': 'same-origin',
});

/** Every answer except the /docs page and its assets: JSON and YAML need no sources of any kind. */
export const API_CSP = "default-src 'none'; frame-ancestors 'none'";

/** Request headers a browser page on an allowed origin may send. */
const ALLOWED_HEADERS = 'Authorization, Content-Type, If-Match, If-None-Match, X-Request-Id';
/** Response headers its script may read. */
const EXPOSED_HEADERS = 'ETag, Location, RateLimit, RateLimit-Policy, Retry-After, WWW-Authenticate, X-Request-Id';

function isDocs(url: string): boolean {
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  return path === '/docs' || path.startsWith('/docs/');
}

export function registerSecurityHeaders(app: FastifyInstance, contract: Contract, corsOrigins: readonly string[]): void {
  // Set on the raw response as the server receives each request, before Fastify sees it: every answer gets
  // them, errors, 404s and the ones Fastify gives without running hooks (frameworkErrors: a malformed URL)
  // included, at no per-reply hook cost. A header the reply sets itself wins (Node merges writeHead's headers
  // over them): the /docs page sets its own (stricter for a page) policy in src/docs/docs-handlers.ts.
  const securityHeaders = Object.entries(SECURITY_HEADERS);
  app.server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
    for (const [name, value] of securityHeaders) res.setHeader(name, value);
    if (!isDocs(req.url ?? '')) res.setHeader('content-security-policy', API_CSP);
  });

  if (corsOrigins.length === 0) return;
  const origins = new Set(corsOrigins);
  // Methods per route, from the document (HEAD with GET, as the router does).
  const methodsByUrl = new Map<string, Set<string>>();
  for (const op of contract.operations) {
    const methods = methodsByUrl.get(op.url) ?? new Set<string>();
    methods.add(op.method);
    if (op.method === 'GET') methods.add('HEAD');
    methodsByUrl.set(op.url, methods);
  }

  app.addHook('onRequest', async (request, reply) => {
    reply.header('vary', 'Origin');
    const origin = request.headers.origin;
    if (typeof origin !== 'string' || !origins.has(origin)) return;
    reply.header('access-control-allow-origin', origin);
    const methods = methodsByUrl.get(request.routeOptions.url ?? '');
    if (request.method === 'OPTIONS' && request.headers['access-control-request-method'] !== undefined && methods) {
      // A preflight for a path the document declares: answered here, before authentication and the 405 route.
      reply
        .code(204)
        .header('access-control-allow-methods', [...methods].sort().join(', '))
        .header('access-control-allow-headers', ALLOWED_HEADERS)
        .header('access-control-max-age', '600');
      return reply.send();
    }
    reply.header('access-control-expose-headers', EXPOSED_HEADERS);
  });
}
