// Shared pieces of the delivery tests: a real receiver on 127.0.0.1 that verifies every signature with the
// off-the-shelf `standardwebhooks` library, checks every delivery against the document's `webhooks` section
// (test/conformance/response-validator.ts) and de-duplicates by webhook-id, and startApp with the delivery
// tests' defaults (a dispatcher the test drives, or lets run in the background).
import http from 'node:http';
import type { TestContext } from 'node:test';
import { EVENT_TYPES } from '../../src/webhooks/events.js';
import { Webhook } from 'standardwebhooks';
import type { Config } from '../../src/config.js';
import type { DeliveryRecord, WebhookFormat, WebhookSubscription } from '../../src/webhooks/delivery.js';
import type { Store } from '../../src/storage/store.js';
import type { DispatcherOptions } from '../../src/webhooks/dispatcher.js';
import { generateWebhookSecret } from '../../src/webhooks/signing.js';
import { startApp, type TestApp } from '../helpers/app.js';
import { answered, postRaw } from '../helpers/raw-request.js';
import { ResponseValidator } from '../conformance/response-validator.js';

let deliveryValidator: ResponseValidator | undefined;
/** The document's check of deliveries, one per test process. */
export function deliveryConformance(): ResponseValidator {
  return (deliveryValidator ??= new ResponseValidator());
}

/** What the receiver does with one request: answer (optionally late, with headers), or never answer. */
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
  reply: (req: Received, n: number) => Reply;
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
      const what = r.reply(got, n);
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

export async function addSubscription(
  store: Store,
  url: string,
  id = 'wh_' + Math.random().toString(36).slice(2),
  events: string[] = [...EVENT_TYPES],
  format: WebhookFormat = 'plain',
): Promise<WebhookSubscription> {
  const sub: WebhookSubscription = {
    id,
    url,
    description: null,
    events,
    format,
    secret: generateWebhookSecret(),
    createdAt: new Date(),
    disabledAt: null,
    disabledReason: null,
  };
  await store.webhooks.insertSubscription(sub, () => undefined);
  return sub;
}

export interface DeliveryApp extends TestApp {
  /** POST /plants with a JSON text (ids beyond 2^53 stay exact) and a plants:write token; resolves with the status. */
  postJson(json: string): Promise<number>;
}

/**
 * startApp with the delivery tests' defaults: receivers on 127.0.0.1 allowed, the dispatcher polling every
 * 200 ms and, unless `background`, run only when the test calls `s.dispatcher.runOnce()` (fake-clock friendly);
 * `dispatcher` options are merged over those.
 */
export async function startDeliveryApp(
  t: TestContext,
  options: { background?: boolean; config?: Partial<Config>; dispatcher?: Partial<DispatcherOptions>; databaseUrl?: string } = {},
): Promise<DeliveryApp> {
  const s = await startApp(t, {
    ...(options.databaseUrl !== undefined && { databaseUrl: options.databaseUrl }),
    config: { webhookAllowedHosts: ['127.0.0.1'], ...options.config },
    dispatcher: { pollMs: 200, ...options.dispatcher },
    backgroundDispatcher: options.background ?? false,
  });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  t.after(() => agent.destroy());
  return { ...s, postJson: async (json) => answered(await postRaw(s.port, s.token.write, json, { agent })).status };
}

export async function deliveriesOf(store: Store, subscriptionId: string): Promise<DeliveryRecord[]> {
  return store.webhooks.listDeliveries(subscriptionId, 10_000);
}

/** The only delivery of a subscription. */
export async function onlyDelivery(store: Store, subscriptionId: string): Promise<DeliveryRecord> {
  const all = await deliveriesOf(store, subscriptionId);
  if (all.length !== 1) throw new Error(`expected one delivery, found ${all.length}`);
  return all[0]!;
}

/**
 * An event body without its trailing `"version"` member (asserting it is there, digits only): what the body
 * says of the plant, to compare byte for byte whatever version the write took.
 */
export function withoutVersion(body: string): string {
  const m = /,"version":(\d+)\}$/.exec(body);
  if (!m) throw new Error(`an event body without a version: ${body}`);
  return body.slice(0, m.index) + '}';
}
