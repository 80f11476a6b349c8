// Peer: Express 5 with express-openapi-validator on plant-store's own OpenAPI document (request validation and
// the bearer security scheme), an in-memory Map behind it. What a team would build instead of plant-store.
import express from 'express';
import * as OpenApiValidator from 'express-openapi-validator';

const expected = `Bearer ${process.env.BENCH_TOKEN}`;
const plants = new Map();
const app = express();
app.use(express.json());
app.use(
  OpenApiValidator.middleware({
    apiSpec: process.env.OPENAPI_FILE,
    validateRequests: true,
    validateResponses: false,
    // Only the routes measured; the others would need handlers this peer does not have.
    ignoreUndocumented: true,
    validateSecurity: { handlers: { bearerAuth: (req) => req.headers.authorization === expected } },
  }),
);
app.post('/plants', (req, res) => {
  const b = req.body;
  const old = plants.get(b.id);
  if (old && (old.name !== b.name || old.tag !== b.tag)) return res.status(409).json({ error: 409, message: 'conflict' });
  plants.set(b.id, { id: b.id, name: b.name, tag: b.tag });
  res.set('location', `/plants/${b.id}`).json({ name: b.name, tag: b.tag });
});
app.get('/plants/:id', (req, res) => {
  const p = plants.get(Number(req.params.id));
  return p ? res.json(p) : res.status(404).json({ error: 404, message: 'not found' });
});
app.get('/plants', (req, res) => {
  const limit = Number(req.query.limit ?? 20);
  const page = [];
  for (const p of plants.values()) {
    if (page.length === limit) break;
    page.push(p);
  }
  res.json(page);
});
app.use((err, req, res, _next) => {
  res.status(err.status ?? 500).json({ error: err.status ?? 500, message: err.message });
});
app.listen(Number(process.env.PORT), '127.0.0.1');
