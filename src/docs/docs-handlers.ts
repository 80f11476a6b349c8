// The document itself, at /openapi.json and /openapi.yaml, and the interactive page at /docs.
// The page's assets come from the swagger-ui-dist copy inside node_modules: no CDN, works offline.
import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import type { Contract } from '../http/contract.js';

export function docsHandlers(contract: Contract) {
  return {
    async getOpenApiJson(_request: FastifyRequest, reply: FastifyReply) {
      return reply.type('application/json; charset=utf-8').send(contract.json);
    },
    async getOpenApiYaml(_request: FastifyRequest, reply: FastifyReply) {
      return reply.type('application/yaml; charset=utf-8').send(contract.yaml);
    },
  };
}

export async function registerDocsPage(app: FastifyInstance, contract: Contract): Promise<void> {
  await app.register(fastifySwagger, { mode: 'static', specification: { document: contract.document as never } });
  await app.register(fastifySwaggerUi, {
    routePrefix: '/docs',
    uiConfig: { tryItOutEnabled: true, displayRequestDuration: true, deepLinking: true },
    // The page loads nothing from other origins, and the policy says so. The plugin's default policy also
    // allows https: styles and fonts, an image host, and `upgrade-insecure-requests`; the last makes browsers
    // fetch the page's own scripts over https, which this plain-HTTP service does not speak, so /docs
    // stayed blank whenever it was opened by an address other than localhost (fastify/fastify-swagger#690).
    staticCSP: true,
    transformStaticCSP: strictDocsCsp,
  });
}

// Swagger UI's top-bar logo is an inline SVG carrying this <style> element (its fill colours). The plugin's
// policy has no hash for it, so Chromium blocked it and reported a CSP violation on every load of /docs.
// test/docs/docs-browser.test.ts fails on any CSP report, so a swagger-ui upgrade that changes it is caught.
const SWAGGER_LOGO_STYLE = '.logo_small_svg__cls-2{fill:#fff}.logo_small_svg__cls-3{fill:#85ea2d}';
const SWAGGER_LOGO_STYLE_HASH = `'sha256-${createHash('sha256').update(SWAGGER_LOGO_STYLE).digest('base64')}'`;

/**
 * The plugin's policy (which carries the hashes its inline code needs) minus every other origin and the https
 * upgrade, plus the hash of the logo's inline style.
 */
function strictDocsCsp(header: string): string {
  const directives = header
    .split(';')
    .map((d) => d.trim().split(/\s+/).filter(Boolean))
    .filter((parts) => parts.length > 0 && parts[0] !== 'upgrade-insecure-requests')
    .map(([name, ...sources]) => [name, ...sources.filter((src) => src.startsWith("'") || src === 'data:')])
    .map((parts) => (parts[0] === 'style-src' ? [...parts, SWAGGER_LOGO_STYLE_HASH] : parts));
  return directives.map((parts) => parts.join(' ')).join('; ') + ';';
}
