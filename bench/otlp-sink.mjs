// An OTLP/HTTP sink for measuring tracing's cost: takes every export (POST /v1/traces), reads it and answers 200,
// counting spans roughly by their spanId members. Usage: node bench/otlp-sink.mjs [port] (default 4318); then
// PAIR_B_ENV="OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318" npm --prefix bench run pair.
import http from 'node:http';

const port = Number(process.argv[2] ?? 4318);
let exports = 0;
let spans = 0;
http
  .createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      exports++;
      spans += Buffer.concat(chunks).toString('utf8').split('"spanId"').length - 1;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  })
  .listen(port, '127.0.0.1', () => console.log(`OTLP sink on http://127.0.0.1:${port}`));
process.on('SIGTERM', () => {
  console.log(`${exports} exports, ${spans} spans`);
  process.exit(0);
});
