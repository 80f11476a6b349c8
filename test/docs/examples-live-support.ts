// What test/docs/examples-live.test.ts reads and sends besides the service's answers: the document and its
// operations, the places of all its examples, the settings of the two servers, the examples not checked
// (SKIPPED), the members the service makes (GENERATED), and exchanges that fetch cannot make (over node:http,
// and a request never finished).
import http from 'node:http';
import { connect } from 'node:net';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';
import { stringifyJson } from '../../src/json/lossless-json.js';
import { pointer } from '../helpers/json-pointer.js';
import { parseRawResponse } from '../helpers/raw-request.js';

export type Node = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const DOC_TEXT = readFileSync(fileURLToPath(new URL('../../../openapi/plant-store.yaml', import.meta.url)), 'utf8');
// Integers as bigints on both sides, so ids beyond 2^53 compare digit for digit.
export const DOC: Node = YAML.parse(DOC_TEXT, { intAsBigInt: true });
export const PACKAGE_VERSION: string = JSON.parse(readFileSync(fileURLToPath(new URL('../../../package.json', import.meta.url)), 'utf8')).version;

/** The clock of the server: fixed, so that a message that prints the time (recover's 400) is exact. */
export const NOW = Date.parse('2026-03-14T09:30:00.000Z');
/** The second server's limits: each small enough to reach in a request or two. */
export const LIMITS = { rateLimitPerToken: 2, authFailuresPerMinute: 1, eventsMaxWaiting: 2, eventsMaxWaitingPerToken: 1, eventsMaxStreams: 2, eventsMaxStreamsPerToken: 1 };
/** REQUEST_TIMEOUT_MS of the first server: its least, so that the 408 comes while the other examples run. */
export const REQUEST_TIMEOUT_MS = 1_000;
/** EVENT_RETENTION of the first server: the default, which the retention 410 example names. */
export const RETENTION_MS = 7 * 86_400_000;

/** Examples not checked here, by their place in the document, and why. */
export const SKIPPED: Record<string, string> = {
  // Only a fault put inside the process makes one (test/http/errors.test.ts replaces a store method): no
  // request from outside does, which is the point of the 500.
  '#/components/responses/InternalError': 'needs a failure inside the service, which no request can cause',
};

/** Members whose value the service makes, held to a shape rather than to the example's value. */
export const TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/;
export const GENERATED: Record<string, (v: unknown, example: unknown) => boolean> = {
  // When something happened here (a create, an attempt, the next try): the clock's, not the example's.
  createdAt: (v) => typeof v === 'string' && TIME.test(v),
  nextAttemptAt: (v) => typeof v === 'string' && TIME.test(v),
  at: (v) => typeof v === 'string' && TIME.test(v),
  timestamp: (v) => typeof v === 'string' && TIME.test(v),
  // How long an attempt took.
  durationMs: (v) => typeof v === 'bigint' && v >= 0n,
  // A plant's version counts every write to the store; the service's version is the package's.
  version: (v, example) => (typeof example === 'string' ? v === PACKAGE_VERSION : typeof v === 'bigint' && v > 0n),
  // 256 random bits, shown once: a webhook's signing secret or an API token's.
  secret: (v, example) => typeof v === 'string' && (String(example).startsWith('pst_') ? /^pst_[A-Za-z0-9_-]{43}$/ : /^whsec_[A-Za-z0-9+/]{43}=$/).test(v),
  ticket: (v) => typeof v === 'string' && /^pse_[A-Za-z0-9_-]{43}$/.test(v),
  // What an attempt sent (signed now, with this run's ids) and what this run's receiver answered.
  request: (v) => isHeaders((v as Node)?.headers) && typeof (v as Node).body === 'string' && /^v1,/.test((v as Node).headers['webhook-signature'] ?? ''),
  response: (v) => isHeaders((v as Node)?.headers) && typeof (v as Node).excerpt === 'string',
};
function isHeaders(v: unknown): boolean {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && Object.values(v).every((h) => typeof h === 'string');
}
/** Ids the service makes: the example's stands for whichever the service made, with the same prefix. */
export const MADE_ID = /^(wh|dlv|msg|tok)_[A-Za-z0-9_-]+$/;
export const MADE_ID_IN_TEXT = /\b(?:wh|dlv|msg|tok)_[A-Za-z0-9_-]+/g;
export const TIME_IN_TEXT = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g;

const escape = (s: string) => s.replaceAll('~', '~0').replaceAll('/', '~1');

export interface Operation {
  path: string;
  method: string;
  op: Node;
  where: string;
}
export const OPERATIONS = new Map<string, Operation>();
for (const [path, item] of Object.entries<Node>(DOC.paths)) {
  for (const [method, op] of Object.entries<Node>(item)) {
    if (op?.operationId) OPERATIONS.set(op.operationId, { path, method, op, where: `#/paths/${escape(path)}/${method}` });
  }
}
export function operation(id: string): Operation {
  const found = OPERATIONS.get(id);
  if (!found) throw new Error(`no operation ${id} in the document`);
  return found;
}

/** Where each example of the document is (media types of request bodies and responses), shared ones once. */
export function allExamplePlaces(): string[] {
  const places = new Set<string>();
  const media = (content: Node | undefined, where: string) => {
    for (const m of Object.values<Node>(content ?? {})) {
      if ('example' in m) places.add(where);
      for (const name of Object.keys(m.examples ?? {})) places.add(`${where}/examples/${name}`);
    }
  };
  const ops = [...OPERATIONS.values()].map((o) => ({ op: o.op, where: o.where }));
  for (const [name, item] of Object.entries<Node>(DOC.webhooks ?? {})) ops.push({ op: item.post, where: `#/webhooks/${name}/post` });
  for (const { op, where } of ops) {
    media(op.requestBody?.content, `${where}/requestBody`);
    for (const [status, r] of Object.entries<Node>(op.responses ?? {})) {
      if (typeof r.$ref === 'string') media(pointer(DOC, r.$ref).content, r.$ref);
      else media(r.content, `${where}/responses/${status}`);
    }
  }
  return [...places];
}

export interface Answer {
  status: number;
  headers: Record<string, string>;
  text: string;
}

/** One exchange over node:http, which sends what fetch refuses to (TRACE, Expect, oversized headers). */
export function exchange(port: number, method: string, path: string, headers: Record<string, string>, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers as Record<string, string>, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * The addPlant example request, its body cut short and never finished: what comes back once the server's
 * REQUEST_TIMEOUT_MS has passed.
 */
export function unfinished(port: number, token: string): Promise<Answer> {
  const media = operation('addPlant').op.requestBody.content['application/json'];
  const body = stringifyJson(media.example);
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () =>
      socket.write(
        `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, body.length >> 1)}`,
      ),
    );
    let raw = '';
    socket.on('data', (d: Buffer) => (raw += d.toString('latin1')));
    socket.on('error', reject);
    socket.on('close', () => {
      const res = parseRawResponse(raw);
      resolve({ status: res.status, headers: res.headers, text: res.body });
    });
  });
}
