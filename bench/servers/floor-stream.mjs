// The floor of GET /events as a stream (issue 39): bare node:http, plants and their events in memory, and each
// new plant's event written to every open stream as its own frame the moment its POST is answered. No store, no
// wake, no grouping: what a stream costs when the only work is one write per event per reader.
// POST /plants: the bearer, a JSON body, the document's rules for id, name and tag, 200 with the plant (as the
// service answers a create; an identical replay 200 without an event, a different plant under the id 409).
// GET /events with Accept: text/event-stream: the stream from now on, framed as the service frames it (a `retry:`
// line, then `event:`, `id:`, `data:` per event), `: keep-alive` on a stream quiet for EVENTS_HEARTBEAT_SECONDS.
// GET /events otherwise: a page of the feed in the service's shape (limit, after), so the bench checks each
// stream's order against the order this server wrote.
import http from 'node:http';
import { hash, randomBytes } from 'node:crypto';

const TOKEN_HASH = hash('sha256', process.env.BENCH_TOKEN, 'hex');
const HEARTBEAT_MS = Number(process.env.EVENTS_HEARTBEAT_SECONDS ?? 15) * 1000;
const BEARER = /^Bearer +([^\s]+) *$/i;
const ID = /^-?\d{1,19}$/;
const MAX_BODY = 64 * 1024;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

const plants = new Map(); // id digits → the plant's JSON
const events = []; // { id, createdAt, data } in the order they were sent
const positions = new Map(); // event id → its index in events
const streams = new Set(); // { res, lastWrite }

// The token compared as the service's cache compares it: SHA-256 of the secret.
const authorized = (req) => {
  const m = BEARER.exec(req.headers.authorization ?? '');
  return m !== null && hash('sha256', m[1], 'hex') === TOKEN_HASH;
};

function reply(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}
const problem = (res, status, title) => reply(res, status, JSON.stringify({ code: status, message: title }));

/** The plant's JSON with id digits as sent (int64, not a double), or a reason it is refused. */
function plantJson(text) {
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    return { error: 'body is not JSON' };
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return { error: 'body must be an object' };
  // The id's digits from the text: JSON.parse rounds ids past 2^53.
  const digits = /"id"\s*:\s*(-?\d+)\s*[,}]/.exec(text)?.[1];
  if (!Number.isInteger(body.id) || !digits || !ID.test(digits) || BigInt(digits) < INT64_MIN || BigInt(digits) > INT64_MAX) return { error: 'id must be an int64' };
  const { name, tag } = body;
  if (typeof name !== 'string' || [...name].length > 256) return { error: 'name must be a string of at most 256 characters' };
  if (tag !== undefined && (typeof tag !== 'string' || [...tag].length > 256)) return { error: 'tag must be a string of at most 256 characters' };
  return { id: digits, json: `{"id":${digits},"name":${JSON.stringify(name)}${tag === undefined ? '' : `,"tag":${JSON.stringify(tag)}`},"version":1}` };
}

/** An event id as the service makes them: msg_, then 6 bytes of time and 10 random, base64url. */
function eventId(now) {
  const bytes = Buffer.alloc(16);
  bytes.writeUIntBE(now, 0, 6);
  randomBytes(10).copy(bytes, 6);
  return 'msg_' + bytes.toString('base64url');
}

function createPlant(req, res) {
  let text = '';
  req.setEncoding('utf8');
  req.on('data', (chunk) => {
    text += chunk;
    if (text.length > MAX_BODY) req.destroy();
  });
  req.on('end', () => {
    const plant = plantJson(text);
    if (plant.error) return problem(res, 400, plant.error);
    const existing = plants.get(plant.id);
    if (existing !== undefined) return existing === plant.json ? reply(res, 200, existing) : problem(res, 409, 'a different plant has this id');
    plants.set(plant.id, plant.json);
    reply(res, 200, plant.json);
    // After the answer, as the service sends after its commit: one write per open stream, this event alone.
    const now = Date.now();
    const event = { id: eventId(now), createdAt: new Date(now).toISOString(), data: plant.json };
    positions.set(event.id, events.length);
    events.push(event);
    const frame = `event: newPlant\nid: ${event.id}\ndata: ${event.data}\n\n`;
    for (const s of streams) {
      s.lastWrite = now;
      s.res.write(frame);
    }
  });
}

function openStream(req, res) {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no' });
  res.write('retry: 2000\n\n');
  const stream = { res, lastWrite: Date.now() };
  streams.add(stream);
  res.on('close', () => streams.delete(stream));
}

function page(url, res) {
  const limit = Math.min(1000, Math.max(1, Number(url.searchParams.get('limit') ?? 100) || 100));
  const after = url.searchParams.get('after');
  const from = after === null ? 0 : positions.get(after);
  if (from === undefined) return problem(res, 400, 'after names no event');
  const start = after === null ? 0 : from + 1;
  const items = events.slice(start, start + limit).map((e) => `{"id":"${e.id}","type":"newPlant","createdAt":"${e.createdAt}","data":${e.data}}`);
  reply(res, 200, `[${items.join(',')}]`);
}

http.createServer((req, res) => {
  const url = new URL(req.url, 'http://floor');
  if (url.pathname === '/plants' && req.method === 'POST') {
    if (!authorized(req)) return problem(res, 401, 'a valid bearer token is required');
    return createPlant(req, res);
  }
  if (url.pathname === '/events' && req.method === 'GET') {
    if (!authorized(req)) return problem(res, 401, 'a valid bearer token is required');
    return /text\/event-stream/i.test(req.headers.accept ?? '') ? openStream(req, res) : page(url, res);
  }
  problem(res, 404, 'not found');
}).listen(Number(process.env.PORT), '127.0.0.1');

// One timer for every stream, as in the service: a keep-alive only on a stream that sent nothing meanwhile.
setInterval(() => {
  const quiet = Date.now() - HEARTBEAT_MS + 100;
  for (const s of streams) {
    if (s.lastWrite > quiet) continue;
    s.lastWrite = Date.now();
    s.res.write(': keep-alive\n\n');
  }
}, HEARTBEAT_MS).unref();
