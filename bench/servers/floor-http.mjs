// The floors of GET /plants/{id} (issue 31) and of a durable POST /plants (issue 42): bare node:http doing
// exactly the work plant-store's answer needs (floor-work.mjs, floor-create.mjs) and nothing else: no framework,
// validator, access log or metrics. One server serves both, as the service does, so a bench round runs every cell
// on one process; the create's writer thread starts on the first create.
import http from 'node:http';
import { answerRequest } from './floor-work.mjs';
import { createPlant } from './floor-create.mjs';

http.createServer((req, res) => {
  if (req.method === 'POST' && req.url === '/plants') return createPlant(req, res);
  const { status, headers, body } = answerRequest(req.method, req.url, req.headers, req.rawHeaders);
  res.writeHead(status, headers);
  res.end(body);
}).listen(Number(process.env.PORT), '127.0.0.1');
