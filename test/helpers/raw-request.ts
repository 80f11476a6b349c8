// Exchanges below fetch: raw bytes over a socket (framing, pipelining, hostile input) and one POST over
// node:http with a JSON text sent as is, so ids beyond 2^53 stay exact (no JSON.stringify of numbers), with
// every outcome visible: the answer, or the socket error (or TIMEOUT) that ended the exchange.
import http from 'node:http';
import { connect } from 'node:net';

/** What one HTTP exchange ended with: a response, or the socket error code that ended it. */
export type Outcome =
  | { kind: 'response'; status: number; headers: http.IncomingHttpHeaders; body: string }
  | { kind: 'error'; code: string };

export interface RawPostOptions {
  /** Default /plants. */
  path?: string;
  /** A keep-alive agent to share; false (default) opens a connection per request. */
  agent?: http.Agent | false;
  /** Past this the request is destroyed and the outcome is the error `TIMEOUT` (default: no deadline). */
  timeoutMs?: number;
  /** The loopback source address (127.0.0.2, ...), so that the server sees another client. */
  localAddress?: string;
}

/** POST `json` (a JSON text, sent byte for byte) with a bearer token to 127.0.0.1:`port`. Never rejects. */
export function postRaw(port: number, token: string, json: string, options: RawPostOptions = {}): Promise<Outcome> {
  return new Promise((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    let settled = false;
    const done = (o: Outcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(o);
    };
    const failed = (e: NodeJS.ErrnoException) => done({ kind: 'error', code: e.code ?? e.message });
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        localAddress: options.localAddress,
        method: 'POST',
        path: options.path ?? '/plants',
        agent: options.agent ?? false,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d));
        res.on('end', () => done({ kind: 'response', status: res.statusCode ?? 0, headers: res.headers, body }));
        res.on('error', failed);
      },
    );
    if (options.timeoutMs !== undefined) {
      timer = setTimeout(() => {
        done({ kind: 'error', code: 'TIMEOUT' });
        req.destroy();
      }, options.timeoutMs);
    }
    req.on('error', failed);
    req.end(json);
  });
}

/** The response of an exchange that must have been answered; a socket error becomes a thrown Error with its code. */
export function answered(o: Outcome): { status: number; headers: http.IncomingHttpHeaders; body: string } {
  if (o.kind === 'error') throw new Error(`no answer: ${o.code}`);
  return o;
}

/** A plant as a JSON text with its id written exactly. */
export function plantJson(id: bigint, name: string): string {
  return `{"id":${id},"name":${JSON.stringify(name)}}`;
}

/**
 * Sends raw bytes to 127.0.0.1:`port` and returns everything the server wrote (latin1), possibly several
 * pipelined responses. By default it reads until the server closes or stays quiet for `quietMs`. With
 * `halfClose` the client ends its side after sending and reads until the server closes: a server that has not
 * closed within `timeoutMs` fails the call (no input may hang it).
 */
export function rawHttp(
  port: number,
  data: string | Buffer,
  options: number | { quietMs?: number; halfClose?: boolean; timeoutMs?: number } = {},
): Promise<string> {
  const { quietMs = 500, halfClose = false, timeoutMs = 5_000 } = typeof options === 'number' ? { quietMs: options } : options;
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    let timer: NodeJS.Timeout | undefined;
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(received);
    };
    socket.on('data', (d: Buffer) => {
      received += d.toString('latin1');
      if (halfClose) return;
      clearTimeout(timer);
      timer = setTimeout(done, quietMs);
    });
    if (halfClose) {
      // ECONNRESET after the answer is fine; 'close' follows.
      socket.on('error', () => {});
      socket.on('close', done);
      socket.end(data);
      timer = setTimeout(() => {
        socket.destroy();
        reject(new Error(`no close within ${timeoutMs} ms for ${JSON.stringify(data.toString('latin1').slice(0, 200))}`));
      }, timeoutMs);
      return;
    }
    socket.on('end', done);
    socket.on('error', (e) => (received ? done() : reject(e)));
    socket.write(data);
    timer = setTimeout(done, quietMs * 4);
  });
}

/** Splits a raw HTTP/1.1 response into status, lower-cased headers and body. */
export function parseRawResponse(raw: string): { status: number; headers: Record<string, string>; body: string } {
  const [head = '', ...rest] = raw.split('\r\n\r\n');
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const l of lines) {
    const i = l.indexOf(':');
    headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body: rest.join('\r\n\r\n') };
}

/** Splits concatenated HTTP/1.1 responses (each with Content-Length) into status, lower-cased headers and body. */
export function splitResponses(raw: string): { status: number; headers: Record<string, string>; body: string }[] {
  const out = [];
  let rest = raw;
  while (rest.length > 0) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) break;
    const [statusLine = '', ...lines] = rest.slice(0, end).split('\r\n');
    const headers: Record<string, string> = {};
    for (const l of lines) headers[l.slice(0, l.indexOf(':')).trim().toLowerCase()] = l.slice(l.indexOf(':') + 1).trim();
    const length = Number(headers['content-length'] ?? 0);
    out.push({ status: Number(statusLine.split(' ')[1]), headers, body: rest.slice(end + 4, end + 4 + length) });
    rest = rest.slice(end + 4 + length);
  }
  return out;
}

/** One request on a connection of its own, so that requests spread over the workers. */
export function fresh(
  port: number,
  path: string,
  token: string,
  init: { method?: string; body?: string; timeoutMs?: number; contentType?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const headers = { authorization: `Bearer ${token}`, ...(init.body !== undefined && { 'content-type': init.contentType ?? 'application/json' }), ...init.headers };
    const req = http.request(
      { host: '127.0.0.1', port, path, method: init.method ?? 'GET', agent: false, timeout: init.timeoutMs, headers },
      (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      },
    );
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('no answer in time')));
    req.end(init.body);
  });
}

/**
 * Resolves once a server of one process (npm test runs the suite with WORKERS=1) has answered GET /healthz on a
 * connection of its own: by then it has read whatever was written to its other connections before this call,
 * which was waiting on their sockets when it accepted this one.
 */
export function readWhatWasSent(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: '/healthz', agent: false }, (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`GET /healthz answered ${res.statusCode}`))));
      })
      .on('error', reject);
  });
}
