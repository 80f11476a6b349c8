// Ceiling, part 1: the least a Node.js server can do for plant-store's requests. A bare node:http handler with
// an in-memory Map that still checks the bearer token and the body's fields, so the work compared is the same.
import http from 'node:http';

const expected = `Bearer ${process.env.BENCH_TOKEN}`;
const plants = new Map();

function send(res, status, body, headers = {}) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

function validPlant(b) {
  return b !== null && typeof b === 'object' && Number.isSafeInteger(b.id) && typeof b.name === 'string' && b.name.length > 0 &&
    (b.tag === undefined || typeof b.tag === 'string');
}

http.createServer((req, res) => {
  if (req.headers.authorization !== expected) return send(res, 401, { error: 401, message: 'Unauthorized' });
  const url = req.url;
  if (req.method === 'POST' && url === '/plants') {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      let b;
      try {
        b = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        return send(res, 400, { error: 400, message: 'bad JSON' });
      }
      if (!validPlant(b)) return send(res, 400, { error: 400, message: 'bad plant' });
      const old = plants.get(b.id);
      if (old && (old.name !== b.name || old.tag !== b.tag)) return send(res, 409, { error: 409, message: 'conflict' });
      plants.set(b.id, { id: b.id, name: b.name, tag: b.tag });
      send(res, 200, { name: b.name, tag: b.tag }, { location: `/plants/${b.id}` });
    });
    return;
  }
  if (req.method === 'GET' && url.startsWith('/plants/')) {
    const p = plants.get(Number(url.slice(8)));
    return p ? send(res, 200, p) : send(res, 404, { error: 404, message: 'not found' });
  }
  if (req.method === 'GET' && url.startsWith('/plants')) {
    const limit = Number(new URL(url, 'http://x').searchParams.get('limit') ?? 20);
    const page = [];
    for (const p of plants.values()) {
      if (page.length === limit) break;
      page.push(p);
    }
    return send(res, 200, page);
  }
  send(res, 404, { error: 404, message: 'not found' });
}).listen(Number(process.env.PORT), '127.0.0.1');
