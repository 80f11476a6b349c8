// The document itself, at /openapi.json and /openapi.yaml, and the interactive page at /docs.
// The page's assets come from the swagger-ui-dist copy inside node_modules: no CDN, works offline.
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
    // The page loads nothing from other origins.
    staticCSP: true,
  });
}
