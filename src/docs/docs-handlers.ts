// The document itself, at /openapi.json and /openapi.yaml, and the interactive page at /docs, whose plugins
// (docs-page.ts) load on the page's first request.
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteHandlerMethod } from 'fastify';
import type { Contract } from '../http/contract.js';
import type { DocsPage } from './docs-page.js';

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

/**
 * The routes @fastify/swagger-ui registers for this page (docs-page.ts), in its order, with its prefixes and
 * options; test/docs/docs-page.test.ts checks them against the plugin's own.
 */
function registerPageRoutes(docs: FastifyInstance, placeholder: RouteHandlerMethod): void {
  const hidden = () => ({ schema: { hide: true } });
  for (const url of ['/static/theme/favicon.svg', '/', '/static/index.html', '/static/swagger-initializer.js', '/json', '/yaml']) {
    docs.get(url, hidden(), placeholder);
  }
  docs.route({
    method: ['HEAD', 'GET'],
    url: '/static/*',
    ...hidden(),
    // As @fastify/static's own: a client gone mid-file ends the request; any other error is the service's answer.
    errorHandler(error, request, reply) {
      if ((error as { code?: string } | undefined)?.code === 'ERR_STREAM_PREMATURE_CLOSE') {
        reply.request.raw.destroy();
        return;
      }
      return docs.errorHandler(error, request, reply);
    },
    handler: placeholder,
  });
}

/**
 * The Plant Store's page at /docs (docs-page.ts). Its routes are the plugin's own, registered now; the plugins
 * themselves load on the first request to any of them, and each route then answers with the plugin's handler.
 */
export async function registerDocsPage(app: FastifyInstance, contract: Contract): Promise<void> {
  let page: DocsPage | undefined;
  let loading: Promise<DocsPage> | undefined;
  const load = () =>
    (loading ??= import('./docs-page.js').then(({ loadDocsPage }) => loadDocsPage(contract)).then(
      (loaded) => (page = loaded),
      (err: unknown) => {
        // The next request tries again.
        loading = undefined;
        throw err;
      },
    ));
  const forward = (key: string): RouteHandlerMethod =>
    function (request, reply) {
      if (page) return answer(page, key, request, reply);
      return load().then((loaded) => answer(loaded, key, request, reply) ?? reply);
    };
  await app.register(async (scope) => {
    scope.addHook('onRoute', (route) => {
      // Every route of the page carries its own metrics label (src/metrics/metrics.ts).
      route.config = { ...route.config, operation: route.url === '/docs' ? 'docsPage' : 'docsAsset' };
      route.handler = forward(`${[route.method].flat().at(-1)} ${route.url}`);
    });
    // The plugin serves the document at /docs/json and /docs/yaml from the parsed object, whose int64 examples
    // are doubles; the page gets the repository's own bytes instead, every digit kept.
    scope.addHook('onSend', async (request, _reply, payload) => {
      const url = request.routeOptions.url;
      return url === '/docs/json' ? contract.json : url === '/docs/yaml' ? contract.yaml : payload;
    });
    await scope.register(
      async (docs) => {
        // The plugin's policy on every answer of the page, as its own hook sets it: on an answer given before
        // the handler (a refusal), the plugins load first.
        docs.addHook('onSend', (_request, reply, payload, done) => {
          if (page) {
            reply.header('content-security-policy', page.csp);
            return done(null, payload);
          }
          load().then((loaded) => {
            reply.header('content-security-policy', loaded.csp);
            done(null, payload);
          }, done);
        });
        registerPageRoutes(docs, () => {
          throw new Error('replaced by onRoute');
        });
      },
      { prefix: '/docs' },
    );
  });
}

function answer(page: DocsPage, key: string, request: FastifyRequest, reply: FastifyReply) {
  const route = page.handlers.get(key);
  if (!route) throw new Error(`the docs page plugins have no route ${key}`);
  return route.handler.call(route.instance, request, reply);
}
