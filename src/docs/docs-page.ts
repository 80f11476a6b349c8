// The /docs page's plugins: @fastify/swagger and @fastify/swagger-ui, and with them @fastify/static, send, glob
// and yaml. docs-handlers.ts loads this module on the first request to the page or one of its assets: no other
// route uses them, and every worker process would hold them from its start (bench/README.md, "Memory").
// The page's assets come from the swagger-ui-dist copy inside node_modules: no CDN, works offline.
import Fastify, { type FastifyInstance, type RouteHandlerMethod } from 'fastify';
import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import type { Contract } from '../http/contract.js';
import { exactJsonPagePlugin } from './exact-json.js';

/** A leaf, the page's icon (the plugin's default icons are Swagger's). */
const FAVICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><path fill="#2e7d32" d="M27 4C13 4 5 11 5 21c0 2 .4 3.8 1 5.3L3 29.5 4.5 31l3.1-3.1C9.3 28.6 11 29 13 29c10 0 14-10 14-25z"/><path fill="#a5d6a7" d="M8 26c4-8 9-13 15-17-5 5-9 10-13 18z"/></svg>`;

/**
 * The Plant Store's page at /docs, registered into `scope`: Swagger UI without its top bar (the logo and the
 * Explore box), showing the document of /openapi.json (the plugin also serves it at /docs/json, where the page
 * loads it from), with JSON answers shown digit for digit (exact-json.ts).
 */
export async function registerPagePlugins(scope: FastifyInstance, contract: Contract): Promise<void> {
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

/** What the service's routes under /docs hand their requests to. */
export interface DocsPage {
  /** The plugins' handler of a route, by method and URL as the plugins registered it. */
  handlers: ReadonlyMap<string, { handler: RouteHandlerMethod; instance: FastifyInstance }>;
  /** The policy the plugin's hook sets on every answer of the page. */
  csp: string;
}

const NO_SCHEMAS = () => () => {
  throw new Error('the docs page compiles no schema');
};

/**
 * The plugins registered into an instance of their own that never listens: the service's routes under /docs
 * call their handlers with the service's request and reply (docs-handlers.ts).
 */
export async function loadDocsPage(contract: Contract): Promise<DocsPage> {
  // Its routes carry no schema to compile: no Ajv, no serializer compiler.
  const page = Fastify({ schemaController: { compilersFactory: { buildValidator: NO_SCHEMAS as never, buildSerializer: NO_SCHEMAS as never } } });
  const handlers = new Map<string, { handler: RouteHandlerMethod; instance: FastifyInstance }>();
  page.addHook('onRoute', function (this: FastifyInstance, route) {
    for (const method of [route.method].flat()) handlers.set(`${method} ${route.url}`, { handler: route.handler as RouteHandlerMethod, instance: this });
  });
  await registerPagePlugins(page, contract);
  await page.ready();
  const csp = (await page.inject({ method: 'GET', url: '/docs' })).headers['content-security-policy'];
  if (typeof csp !== 'string') throw new Error('the docs page plugin set no content-security-policy');
  return { handlers, csp };
}
