// The floor's work (floor-work.mjs) in a Fastify route with nothing else (no hooks, schemas, logger or plugins):
// what the framework itself adds to the floor of GET /plants/{id}, headers set on the reply as a Fastify
// service sets them. Set beside the floor with PAIR_A_KIND=floor PAIR_B_KIND=floor-fastify.
import Fastify from 'fastify';
import { answerRequest } from './floor-work.mjs';

const app = Fastify({ logger: false });

const handler = (request, reply) => {
  const { status, headers, body } = answerRequest(request.method, request.url, request.headers, request.raw.rawHeaders);
  for (let i = 0; i < headers.length; i += 2) reply.header(headers[i], headers[i + 1]);
  reply.code(status).send(body);
};
app.get('/plants/:id', handler);
app.setNotFoundHandler(handler);
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
