// Ceiling, part 2: a minimal Fastify app with an in-memory Map, JSON-schema validation of the body and the
// bearer token checked in a hook: the framework's own floor for plant-store's requests.
import Fastify from 'fastify';

const expected = `Bearer ${process.env.BENCH_TOKEN}`;
const plants = new Map();
const app = Fastify({ logger: false });

const plant = { type: 'object', required: ['id', 'name'], properties: { id: { type: 'integer' }, name: { type: 'string', minLength: 1 }, tag: { type: 'string' } } };
const error = { type: 'object', properties: { error: { type: 'integer' }, message: { type: 'string' } } };

app.addHook('onRequest', async (request, reply) => {
  if (request.headers.authorization !== expected) return reply.code(401).send({ error: 401, message: 'Unauthorized' });
});

app.post('/plants', { schema: { body: plant, response: { 200: { type: 'object', properties: { name: { type: 'string' }, tag: { type: 'string' } } }, 409: error } } }, async (request, reply) => {
  const b = request.body;
  const old = plants.get(b.id);
  if (old && (old.name !== b.name || old.tag !== b.tag)) return reply.code(409).send({ error: 409, message: 'conflict' });
  plants.set(b.id, { id: b.id, name: b.name, tag: b.tag });
  reply.header('location', `/plants/${b.id}`);
  return { name: b.name, tag: b.tag };
});

app.get('/plants/:id', { schema: { params: { type: 'object', properties: { id: { type: 'integer' } } }, response: { 200: plant, 404: error } } }, async (request, reply) => {
  const p = plants.get(request.params.id);
  return p ?? reply.code(404).send({ error: 404, message: 'not found' });
});

app.get('/plants', { schema: { querystring: { type: 'object', properties: { limit: { type: 'integer', default: 20 } } }, response: { 200: { type: 'array', items: plant } } } }, async (request) => {
  const page = [];
  for (const p of plants.values()) {
    if (page.length === request.query.limit) break;
    page.push(p);
  }
  return page;
});

await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
