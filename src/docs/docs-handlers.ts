// The document itself, at /openapi.json and /openapi.yaml, and the interactive page at /docs.
// The page's assets come from the swagger-ui-dist copy inside node_modules: no CDN, works offline.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import type { Contract } from '../http/contract.js';
import { exactJsonPagePlugin } from './exact-json.js';

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

/** A leaf, the page's icon (the plugin's default icons are Swagger's). */
const FAVICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><path fill="#2e7d32" d="M27 4C13 4 5 11 5 21c0 2 .4 3.8 1 5.3L3 29.5 4.5 31l3.1-3.1C9.3 28.6 11 29 13 29c10 0 14-10 14-25z"/><path fill="#a5d6a7" d="M8 26c4-8 9-13 15-17-5 5-9 10-13 18z"/></svg>`;

/**
 * The Plant Store's page at /docs: Swagger UI without its top bar (the logo and the Explore box), showing the
 * document of /openapi.json (the plugin also serves it at /docs/json, the same bytes, which is where the page
 * loads it from), with JSON answers shown digit for digit (exact-json.ts).
 */
export async function registerDocsPage(app: FastifyInstance, contract: Contract): Promise<void> {
  await app.register(async (scope) => {
    // Every route of the page carries its own metrics label (src/metrics/metrics.ts).
    scope.addHook('onRoute', (route) => {
      route.config = { ...route.config, operation: route.url === '/docs' ? 'docsPage' : 'docsAsset' };
    });
    // The plugin serves the document at /docs/json and /docs/yaml from the parsed object, whose int64 examples
    // are doubles; the page gets the repository's own bytes instead, every digit kept.
    scope.addHook('onSend', async (request, _reply, payload) => {
      const url = request.routeOptions.url;
      return url === '/docs/json' ? contract.json : url === '/docs/yaml' ? contract.yaml : payload;
    });
    await scope.register(fastifySwagger, { mode: 'static', specification: { document: contract.document as never } });
    await scope.register(fastifySwaggerUi, {
      routePrefix: '/docs',
      // No logo (the plugin's default is Fastify's); its typings lack the null that says so.
      logo: null as unknown as undefined,
      theme: {
        title: `${contract.document.info?.title ?? 'Plant Store'} API`,
        favicon: [{ filename: 'favicon.svg', rel: 'icon', sizes: 'any', type: 'image/svg+xml', content: FAVICON }],
      },
      uiConfig: {
        // The base layout has no top bar: no Swagger logo and no box to load some other document.
        layout: 'BaseLayout',
        plugins: [exactJsonPagePlugin()],
        tryItOutEnabled: true,
        displayRequestDuration: true,
        deepLinking: true,
      },
      // The page loads nothing from other origins, and the policy says so. The plugin's default policy also
      // allows https: styles and fonts, an image host, and `upgrade-insecure-requests`; the last makes browsers
      // fetch the page's own scripts over https, which this plain-HTTP service does not speak, so /docs would
      // stay blank whenever it is opened by an address other than localhost (fastify/fastify-swagger#690).
      staticCSP: true,
      transformStaticCSP: strictDocsCsp,
    });
  });
}

/** The plugin's policy (which carries the hashes its inline code needs) minus every other origin and the https upgrade. */
function strictDocsCsp(header: string): string {
  const directives = header
    .split(';')
    .map((d) => d.trim().split(/\s+/).filter(Boolean))
    .filter((parts) => parts.length > 0 && parts[0] !== 'upgrade-insecure-requests')
    .map(([name, ...sources]) => [name, ...sources.filter((src) => src.startsWith("'") || src === 'data:')]);
  return directives.map((parts) => parts.join(' ')).join('; ') + ';';
}
