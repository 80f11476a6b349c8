// The one webhook receiver of the tests: a real server on 127.0.0.1 that verifies every signature with the
// off-the-shelf `standardwebhooks` library, checks every delivery against the document's `webhooks` section
// (test/helpers/response-validator.ts) and de-duplicates by webhook-id. Its replies are chosen by the test:
// a status (optionally late, or held until a promise settles), or no answer at all.
import http from 'node:http';
import type { TestContext } from 'node:test';
import { Webhook } from 'standardwebhooks';
import type { WebhookFormat } from '../../src/webhooks/delivery.js';
import { ResponseValidator } from './response-validator.js';

let deliveryValidator: ResponseValidator | undefined;
/** The document's check of deliveries, one per test process. */
export function deliveryConformance(): ResponseValidator {
  return (deliveryValidator ??= new ResponseValidator());
}

/** What the receiver does with one request: answer (optionally late, with headers), or never answer. A reply
 * given as a promise holds the answer until it settles (a delivery caught in flight). */
export type Reply = { status: number; headers?: Record<string, string>; body?: string; delayMs?: number } | 'hang';

export interface Received {
  /** The path the request was sent to. */
  path: string;
  method: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** Wall-clock time of arrival (ms). */
  at: number;
  /** The standardwebhooks library's verdict: undefined when the signature verified, else its error. */
  verifyError?: string;
}

export interface Receiver {
  url: string;
  port: number;
  /** Every request, in arrival order (duplicates included). */
  requests: Received[];
  /** Verified deliveries by webhook-id (first arrival). */
  byId: Map<string, Received>;
  /**
   * Requests whose signature did not verify, whose repeat carried a different body, or that the document's
   * `webhooks` section does not describe (headers, body for its type and, when `format` is set, its format).
   */
  problems: string[];
  /** The format of the subscriptions delivering here, when the test knows it: their bodies are checked for it. */
  format?: WebhookFormat;
  /** Decides the reply to the n-th request (0-based); 200 by default. */
  reply: (req: Received, n: number) => Reply | Promise<Reply>;
  /** Resolves once `predicate` holds (checked on each request), or rejects after `timeoutMs`. */
  until(predicate: (r: Receiver) => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** A receiver verifying with `secret` (a function when the subscription is made after the receiver), on `port` (0: any). */
export async function startReceiver(
  t: TestContext,
  secret: string | (() => string),
  reply?: Receiver['reply'],
  port = 0,
): Promise<Receiver> {
  const secretOf = typeof secret === 'string' ? () => secret : secret;
  const waiters = new Set<() => void>();
  const hanging = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const got: Received = { path: req.url ?? '', method: req.method ?? '', headers: req.headers, body, at: Date.now() };
      // Checked before the request is recorded, so a test that waits on it sees the problems too.
      try {
        for (const p of await deliveryConformance().checkDelivery(req.headers, body, r.format)) r.problems.push(`${req.headers['webhook-id']}: ${p}`);
      } catch (err) {
        r.problems.push(`${req.headers['webhook-id']}: the conformance check failed: ${(err as Error).message}`);
      }
      try {
        new Webhook(secretOf()).verify(body, req.headers as Record<string, string>);
      } catch (err) {
        got.verifyError = (err as Error).message;
        r.problems.push(`${req.headers['webhook-id']}: signature did not verify: ${got.verifyError}`);
      }
      const id = String(req.headers['webhook-id']);
      const n = r.requests.length;
      r.requests.push(got);
      if (!got.verifyError) {
        const first = r.byId.get(id);
        if (first && first.body !== body) r.problems.push(`${id}: a repeat carried a different body`);
        if (!first) r.byId.set(id, got);
      }
      for (const w of waiters) w();
      const what = await r.reply(got, n);
      if (what === 'hang') {
        hanging.add(res);
        res.on('close', () => hanging.delete(res));
        return;
      }
      const send = () => {
        if (res.destroyed) return;
        res.writeHead(what.status, what.headers ?? {});
        res.end(what.body ?? '');
      };
      if (what.delayMs) {
        const timer = setTimeout(send, what.delayMs);
        res.on('close', () => clearTimeout(timer));
      } else send();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  const bound = (server.address() as { port: number }).port;
  const r: Receiver = {
    url: `http://127.0.0.1:${bound}/hooks`,
    port: bound,
    requests: [],
    byId: new Map(),
    problems: [],
    reply: reply ?? (() => ({ status: 200 })),
    until(predicate, timeoutMs = 10_000) {
      if (predicate(r)) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!predicate(r)) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve();
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`receiver: condition not met within ${timeoutMs} ms (${r.requests.length} requests, ${r.byId.size} distinct)`));
        }, timeoutMs);
        waiters.add(check);
      });
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  t.after(() => r.close());
  return r;
}
