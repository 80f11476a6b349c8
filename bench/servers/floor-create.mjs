// The floor of a durable create, POST /plants (issue 42): exactly the work plant-store's 200 to a create needs,
// and nothing else (no framework, validator, access log, metrics, load shedding or event sequencing), served by
// floor-http.mjs beside the floor of GET by id, on the same plant-store database file (DATABASE_FILE). It
// - checks the bearer as floor-work.mjs does (one header, the Bearer form, the token's shape and its cached row),
//   with the plants:write scope (403 without it), and counts the request for the RateLimit fields;
// - takes application/json only (a charset other than UTF-8, or any Content-Encoding, is 415), at most 1 MiB
//   (BODY_LIMIT_BYTES' default), UTF-8, parsed by the service's own int64-exact parser with duplicate members
//   refused (src/http/json-parser.ts, from dist/), then checks NewPlant as the service does: an object, `id` an
//   int64 written as a plain integer, `name` a string of at most 256 code points, `tag` absent or such a string,
//   both well-formed Unicode; other members are ignored, as the service ignores them;
// - commits off the event loop as the service does (src/storage/batcher.ts, write-transports.ts): one writer
//   thread (floor-create-writer.mjs) with its own connection (WAL, synchronous=FULL); the creates that arrived
//   in one turn of the event loop (setImmediate) go to it as one IMMEDIATE transaction, at most one batch in
//   flight, the next one gathering meanwhile and sent the moment the previous one's COMMIT returns; each create
//   is answered then. The batch crosses as a flat array, as writer-wire.ts sends it;
// - answers as the service answers a create: 200 with the plant's name and tag, the security headers,
//   X-Request-Id, Cache-Control, RateLimit-Policy, RateLimit, Location, the ETag of the version; a replay of
//   the same plant is 200 with its version, another plant under a taken id 409.
import { isUtf8 } from 'node:buffer';
import { Worker } from 'node:worker_threads';
import { FIXED, POLICY, bearerToken, countRequest, refused, requestIdOf } from './floor-work.mjs';
import { parseJson, exactInteger, writtenAsInteger, TooManyExactNumbersError } from '../../dist/src/json/lossless-json.js';
import { duplicateMember } from '../../dist/src/json/duplicate-members.js';

const BODY_LIMIT = 1_048_576;
const MAX_EXACT_NUMBERS = 1_000;
const MAX_LENGTH = 256;
/** src/storage/batcher.ts MAX_BATCH: a burst becomes several commits. */
const MAX_BATCH = 2_000;
const CHARSET = /;\s*charset\s*=\s*"?([^";\s]+)"?/i;
const CREATED = 0;
const REPLAYED = 1;

function send(res, { status, headers, body }) {
  res.writeHead(status, headers);
  res.end(body);
}

/** Answers one POST /plants. */
export function createPlant(req, res) {
  const headers = req.headers;
  const requestId = requestIdOf(headers);
  const now = Date.now();
  const token = bearerToken(headers, req.rawHeaders, now);
  if (!token) return send(res, refused(requestId, 401, 'The access token is not valid.', ['www-authenticate', 'Bearer realm="plant-store", error="invalid_token"']));
  if (!token.scopes.includes('plants:write')) {
    return send(res, refused(requestId, 403, 'This operation needs the scope plants:write.', ['www-authenticate', 'Bearer realm="plant-store", error="insufficient_scope", scope="plants:write"']));
  }
  const rateLimit = countRequest(token.id, now);
  if (rateLimit === undefined) return send(res, refused(requestId, 429, 'Too many requests for this token.', ['ratelimit-policy', POLICY]));
  const limited = ['ratelimit-policy', POLICY, 'ratelimit', rateLimit];
  const bad = (status, message, extra = []) => send(res, refused(requestId, status, message, [...limited, ...extra]));
  const type = headers['content-type'];
  if (type === undefined || type.split(';', 1)[0].trim().toLowerCase() !== 'application/json') {
    req.resume();
    return bad(415, 'The request body must be sent as Content-Type: application/json.');
  }
  const charset = CHARSET.exec(type)?.[1]?.toLowerCase();
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
    req.resume();
    return bad(415, `The request body must be UTF-8 JSON; charset ${charset.slice(0, 40)} is not supported.`);
  }
  const encoding = headers['content-encoding']?.trim().toLowerCase();
  if (encoding !== undefined && encoding !== '' && encoding !== 'identity') {
    req.resume();
    return bad(415, `The request body must not be compressed; Content-Encoding ${encoding.slice(0, 40)} is not supported.`, ['accept-encoding', 'identity']);
  }
  let chunks = [];
  let size = 0;
  req.on('data', (chunk) => {
    if (chunks === undefined) return;
    size += chunk.length;
    if (size > BODY_LIMIT) {
      chunks = undefined;
      bad(413, `The request body is larger than ${BODY_LIMIT} bytes.`);
      return;
    }
    chunks.push(chunk);
  });
  req.on('end', () => {
    if (chunks === undefined) return;
    const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
    const plant = newPlant(body);
    if (typeof plant === 'string') return bad(400, plant);
    submit({ plant, requestId, rateLimit, res });
  });
}

/** The NewPlant of a body as { id (bigint), name, tag (string or null) }, or why it is refused (a 400's message). */
function newPlant(buffer) {
  if (buffer.length === 0) return 'The request body is empty; send a JSON object.';
  if (!isUtf8(buffer)) return 'The request body is not valid UTF-8.';
  const text = buffer.toString('utf8');
  let value;
  try {
    value = parseJson(text, 'schema', { maxExactNumbers: MAX_EXACT_NUMBERS });
  } catch (err) {
    if (err instanceof TooManyExactNumbersError) return `The request body holds ${err.message}; at most ${err.limit} are accepted.`;
    return `The request body is not valid JSON${err instanceof SyntaxError ? `: ${err.message}`.slice(0, 200) : ''}`;
  }
  const duplicate = duplicateMember(text);
  if (duplicate) {
    const where = duplicate.at === '' ? '' : ` in the object at ${duplicate.at.slice(0, 100)}`;
    return `The request body has the member '${duplicate.name.slice(0, 100)}' twice${where}: member names must be unique (I-JSON, RFC 7493).`;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'The request body must be a JSON object.';
  if (value.id === undefined) return "body must have the required property 'id'.";
  if (typeof value.id !== 'number' || !Number.isInteger(value.id)) return 'body/id must be an integer.';
  const id = exactInteger(value, 'id');
  if (id === undefined) return 'body/id must be an integer from -9223372036854775808 to 9223372036854775807.';
  if (value.name === undefined) return "body must have the required property 'name'.";
  for (const field of ['name', 'tag']) {
    const v = value[field];
    if (v === undefined) continue;
    if (typeof v !== 'string') return `body/${field} must be a string.`;
    if (codePointsOver(v, MAX_LENGTH)) return `body/${field} must be at most ${MAX_LENGTH} characters long (Unicode code points).`;
  }
  if (!writtenAsInteger(value, 'id')) return 'body/id must be written as a plain integer (digits only: no fraction, exponent or -0).';
  for (const field of ['name', 'tag']) {
    if (typeof value[field] === 'string' && !value[field].isWellFormed()) return `body/${field} must be well-formed Unicode (it holds an unpaired surrogate).`;
  }
  return { id, name: value.name, tag: value.tag ?? null };
}

function codePointsOver(s, max) {
  if (s.length <= max) return false;
  let n = 0;
  for (const _ of s) if (++n > max) return true;
  return false;
}

// The group commit (src/storage/batcher.ts with one batch in flight) and the writer thread (write-transports.ts),
// started on the first create so that the GET floor's process stays as it was.
let writer;
let pending = [];
let inFlight;
let scheduled = false;

function submit(write) {
  pending.push(write);
  if (inFlight === undefined && !scheduled) {
    scheduled = true;
    setImmediate(flush);
  }
}

function flush() {
  scheduled = false;
  if (inFlight !== undefined || pending.length === 0) return;
  const batch = pending.length <= MAX_BATCH ? pending : pending.slice(0, MAX_BATCH);
  pending = pending.length <= MAX_BATCH ? [] : pending.slice(MAX_BATCH);
  inFlight = batch;
  const wire = new Array(batch.length * 3);
  for (let i = 0, k = 0; i < batch.length; i++, k += 3) {
    const { id, name, tag } = batch[i].plant;
    wire[k] = id;
    wire[k + 1] = name;
    wire[k + 2] = tag;
  }
  (writer ??= startWriter()).postMessage(wire);
}

function startWriter() {
  const worker = new Worker(new URL('./floor-create-writer.mjs', import.meta.url), {
    workerData: { file: process.env.DATABASE_FILE }, execArgv: [], resourceLimits: { maxYoungGenerationSizeMb: 8 },
  });
  worker.on('message', (reply) => {
    const batch = inFlight;
    inFlight = undefined;
    // What arrived during the commit goes at once: it has already waited one commit.
    flush();
    if (!Array.isArray(reply)) return failAll(batch, reply.failed);
    for (let i = 0; i < batch.length; i++) answer(batch[i], reply[2 * i], reply[2 * i + 1]);
  });
  const gone = (err) => {
    writer = undefined;
    const batch = inFlight ?? [];
    inFlight = undefined;
    failAll(batch, err.message);
    flush();
  };
  worker.on('error', gone);
  worker.on('exit', (code) => gone(new Error(`the writer exited (code ${code})`)));
  return worker;
}

function failAll(batch, message) {
  for (const w of batch) send(w.res, refused(w.requestId, 503, `The store is unavailable (${message}); nothing was stored.`, ['ratelimit-policy', POLICY, 'ratelimit', w.rateLimit]));
}

function answer({ plant, requestId, rateLimit, res }, kind, version) {
  if (kind !== CREATED && kind !== REPLAYED) {
    return send(res, refused(requestId, 409, `A plant with id ${plant.id} already exists with a different name or tag.`, ['ratelimit-policy', POLICY, 'ratelimit', rateLimit]));
  }
  const body = plant.tag === null ? `{"name":${JSON.stringify(plant.name)}}` : `{"name":${JSON.stringify(plant.name)},"tag":${JSON.stringify(plant.tag)}}`;
  res.writeHead(200, [
    ...FIXED, 'x-request-id', requestId, 'cache-control', 'no-store', 'ratelimit-policy', POLICY, 'ratelimit', rateLimit,
    'location', `/plants/${plant.id}`, 'etag', `"${version}"`, 'content-type', 'application/json; charset=utf-8', 'content-length', String(Buffer.byteLength(body)),
  ]);
  res.end(body);
}
