// Sends one delivery: a signed POST of the exact payload bytes over node:http(s), connecting only to
// addresses the SSRF guard accepts (checked at connect time), following no redirect, within one deadline
// for the whole exchange. The answer's body is read up to a few KB and discarded.
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { checkSendTarget, createGuardedLookup } from './ssrf-guard.js';
import { sign } from './signing.js';
import { tracing } from '../tracing/tracing-switch.js';

export const USER_AGENT = 'plant-store-webhooks/1.0';
/** How much of a receiver's answer is read (and thrown away) before the connection is dropped. */
const MAX_RESPONSE_BYTES = 4 * 1024;
/** How much of an error text is kept. */
const MAX_ERROR_LENGTH = 300;

export interface SendInput {
  url: string;
  secret: string;
  /** The event id: the `webhook-id` of every attempt. */
  eventId: string;
  /** The exact body. */
  payload: string;
  /** Headers sent as they are besides the signed ones (the event's `ce-*` attributes). */
  headers?: Readonly<Record<string, string>>;
}

export interface SendResult {
  /** The receiver's status, or null when no answer came. */
  statusCode: number | null;
  /** Why the attempt did not succeed (timeout, connection error, non-2xx); null on 2xx. */
  error: string | null;
  durationMs: number;
  /** The Retry-After header of the answer, if any. */
  retryAfter: string | null;
  /** True when the SSRF guard refused the target address (nothing was sent). */
  refused?: boolean;
}

export interface SenderOptions {
  /** Deadline for the whole exchange: connect, send, and the answer's status line and headers. */
  timeoutMs: number;
  allowedHosts: readonly string[];
  /** Unix seconds for `webhook-timestamp`; the wall clock by default (receivers compare it with theirs). */
  timestampSeconds?: () => number;
}

export type Sender = (input: SendInput, signal?: AbortSignal) => Promise<SendResult>;

export function createSender(options: SenderOptions): Sender {
  const lookup = createGuardedLookup(options.allowedHosts);
  const timestamp = options.timestampSeconds ?? (() => Math.floor(Date.now() / 1000));

  return (input, signal) =>
    new Promise<SendResult>((resolve) => {
      const started = performance.now();
      let settled = false;
      let statusCode: number | null = null;
      let retryAfter: string | null = null;
      let refused = false;
      let req: http.ClientRequest | undefined;

      // With tracing on, the address check is a span: the URL's check, and for a host name the guarded
      // lookup at connect time (Node looks up no IP literal).
      const check = tracing.on ? tracing.start('webhook address check') : undefined;
      let checked = false;
      const endCheck = (err?: Error | null) => {
        if (!check || checked) return;
        checked = true;
        if (err) check.fail(err);
        check.end();
      };
      const finish = (error: string | null) => {
        if (settled) return;
        settled = true;
        endCheck();
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        const durationMs = Math.round(performance.now() - started);
        if (error === null && statusCode !== null && (statusCode < 200 || statusCode > 299)) {
          error = statusCode >= 300 && statusCode <= 399 ? `HTTP ${statusCode}: redirects are not followed` : `HTTP ${statusCode}`;
        }
        resolve({ statusCode, error: error === null ? null : error.slice(0, MAX_ERROR_LENGTH), durationMs, retryAfter, refused });
        req?.destroy();
      };
      const onAbort = () => finish('aborted: the dispatcher is stopping');
      const timer = setTimeout(() => {
        // The status already arrived: that is the answer, whatever the body does.
        finish(statusCode === null ? `timeout: no answer within ${options.timeoutMs} ms` : null);
      }, options.timeoutMs);
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });

      let target: URL;
      try {
        target = checkSendTarget(input.url, options.allowedHosts);
      } catch (err) {
        refused = true;
        endCheck(err as Error);
        return finish((err as Error).message);
      }
      if (check && isIP(target.hostname.replace(/^\[|\]$/g, '')) !== 0) endCheck();
      const body = Buffer.from(input.payload, 'utf8');
      const headers = {
        'content-type': 'application/json',
        'content-length': String(body.length),
        'user-agent': USER_AGENT,
        ...input.headers,
        'webhook-id': input.eventId,
        'webhook-timestamp': '',
        'webhook-signature': '',
      };
      try {
        const ts = timestamp();
        headers['webhook-timestamp'] = String(ts);
        headers['webhook-signature'] = sign(input.secret, input.eventId, ts, body);
      } catch (err) {
        return finish(`cannot sign: ${(err as Error).message}`);
      }
      const request = target.protocol === 'https:' ? https.request : http.request;
      try {
        req = request(target, {
          method: 'POST',
          headers,
          // A fresh connection per attempt: the address check in `lookup` runs on every connect.
          agent: false,
          lookup: (check ? lookupThen(lookup, endCheck) : lookup) as unknown as http.RequestOptions['lookup'],
          // Never follow anything: http.request does not, and a 3xx is reported as a failure above.
        });
      } catch (err) {
        return finish(`cannot send: ${(err as Error).message}`);
      }
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (statusCode === null && err.name === 'AddressRejectedError') refused = true;
        finish(statusCode === null ? describeError(err) : null);
      });
      req.on('response', (res) => {
        statusCode = res.statusCode ?? null;
        const ra = res.headers['retry-after'];
        retryAfter = typeof ra === 'string' ? ra : null;
        let read = 0;
        res.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read >= MAX_RESPONSE_BYTES) finish(null);
        });
        res.on('end', () => finish(null));
        res.on('error', () => finish(null));
        res.on('close', () => finish(null));
      });
      req.end(body);
    });
}

type GuardedLookup = ReturnType<typeof createGuardedLookup>;
type LookupCallback = Extract<Parameters<GuardedLookup>[1], (...args: never[]) => void>;

/** `lookup`, telling `after` how it ended before its caller hears. */
function lookupThen(lookup: GuardedLookup, after: (err: Error | null) => void): GuardedLookup {
  return (hostname, options, callback) => {
    const cb = (typeof options === 'function' ? options : callback)!;
    const then: LookupCallback = (err, address, family) => {
      after(err);
      cb(err, address, family);
    };
    if (typeof options === 'function') lookup(hostname, then);
    else lookup(hostname, options, then);
  };
}

function describeError(err: NodeJS.ErrnoException): string {
  if (err.name === 'AddressRejectedError') return err.message;
  const code = err.code ? `${err.code}: ` : '';
  return `connection error: ${code}${err.message}`;
}
