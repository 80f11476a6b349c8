// Security headers on every answer, and CORS for the origins CORS_ORIGINS names (none by default).
// Written by hand rather than with @fastify/helmet and @fastify/cors: a dozen fixed headers and an exact-origin
// list need no dependency, and a global helmet CSP would have to be kept away from the /docs page's own policy.
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
const ALLOWED_HEADERS = 'Authorization, Content-Type, If-Match, If-None-Match, Last-Event-ID, X-Request-Id';
/** Response headers its script may read. */
const EXPOSED_HEADERS = 'ETag, Link, Location, Preference-Applied, RateLimit, RateLimit-Policy, Retry-After, WWW-Authenticate, X-Request-Id, X-Total-Count';

function isDocs(url: string): boolean {
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  return path === '/docs' || path.startsWith('/docs/');
}

/** The security headers and the API policy, for every answer but the /docs page's. */
const API_HEADERS: Readonly<Record<string, string>> = Object.freeze({ ...SECURITY_HEADERS, 'content-security-policy': API_CSP });

/**
 * The headers every answer to `url` carries. Given to the reply (app.ts's first onRequest hook, and
 * frameworkErrors for what Fastify answers without hooks) rather than set on the raw response: a header set
 * there makes Node take its slow path for every other header of the answer, which cost GET by id twice what
 * the same headers cost on the reply. The /docs page sets its own stricter policy over them.
 */
export function securityHeadersFor(url: string): Readonly<Record<string, string>> {
  return isDocs(url) ? SECURITY_HEADERS : API_HEADERS;
}

/** CORS for the origins CORS_ORIGINS names; nothing when it names none. */
export function registerCors(app: FastifyInstance, contract: Contract, corsOrigins: readonly string[]): void {
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
