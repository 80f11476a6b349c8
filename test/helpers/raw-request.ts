// One POST over node:http with a JSON text sent as is, so ids beyond 2^53 stay exact (no JSON.stringify of
// numbers), and every outcome is visible: the answer, or the socket error (or TIMEOUT) that ended the exchange.
import http from 'node:http';

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
