// The floor of GET /plants/{id} (issue 31): bare node:http doing exactly the work plant-store's answer needs
// (floor-work.mjs) and nothing else: no framework, validator, access log or metrics.
import http from 'node:http';
import { answerRequest } from './floor-work.mjs';

http.createServer((req, res) => {
  const { status, headers, body } = answerRequest(req.method, req.url, req.headers, req.rawHeaders);
  res.writeHead(status, headers);
  res.end(body);
}).listen(Number(process.env.PORT), '127.0.0.1');
