// Sends one delivery: a signed POST of the exact payload bytes over node:http(s), connecting only to
// addresses the SSRF guard accepts (checked at connect time), following no redirect, within one deadline
// for the whole exchange. The answer's body is read up to a few KB: its first KiB is kept as the attempt's
// excerpt, the rest discarded.
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
/** How much of the answer's body an attempt keeps (bytes, cut at a character's start). */
export const EXCERPT_BYTES = 1024;
/** How many of the answer's headers an attempt keeps, and how much of each value. */
export const MAX_ANSWER_HEADERS = 50;
export const MAX_HEADER_VALUE = 256;

/** The request an attempt sent: its headers as sent and its exact body. */
export interface SentRequest {
  headers: Record<string, string>;
  body: string;
}

/**
 * What the receiver answered, bounded: it is untrusted text, shown as text. `truncated` when the excerpt is not
 * the whole body (longer, or not finished when the exchange ended).
 */
export interface ReceivedAnswer {
  headers: Record<string, string>;
  excerpt: string;
  truncated: boolean;
}

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
  /** The request, once one was made (absent when refused or not signed). */
  request?: SentRequest;
  /** The answer's headers and excerpt, when an answer came. */
  response?: ReceivedAnswer;
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
      let sent: SentRequest | undefined;
      let answerHeaders: Record<string, string> | undefined;
      const kept: Buffer[] = [];
      let keptBytes = 0;
      let read = 0;
      let ended = false;

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
        resolve({
          statusCode,
          error: error === null ? null : error.slice(0, MAX_ERROR_LENGTH),
          durationMs,
          retryAfter,
          refused,
          ...(sent && !refused && { request: sent }), // a refused address was sent nothing
          ...(answerHeaders && { response: { headers: answerHeaders, ...excerptOf(Buffer.concat(kept, keptBytes), read, ended) } }),
        });
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
      sent = { headers: { ...headers }, body: input.payload };
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (statusCode === null && err.name === 'AddressRejectedError') refused = true;
        finish(statusCode === null ? describeError(err) : null);
      });
      req.on('response', (res) => {
        statusCode = res.statusCode ?? null;
        const ra = res.headers['retry-after'];
        retryAfter = typeof ra === 'string' ? ra : null;
        answerHeaders = boundedHeaders(res.rawHeaders);
        res.on('data', (chunk: Buffer) => {
          read += chunk.length;
          // One byte beyond the excerpt tells whether it was cut.
          if (keptBytes <= EXCERPT_BYTES) {
            const part = chunk.subarray(0, EXCERPT_BYTES + 1 - keptBytes);
            kept.push(part);
            keptBytes += part.length;
          }
          if (read >= MAX_RESPONSE_BYTES) finish(null);
        });
        res.on('end', () => {
          ended = true;
          finish(null);
        });
        res.on('error', () => finish(null));
        res.on('close', () => finish(null));
      });
      req.end(body);
    });
}

/** The answer's headers (names lower-cased, repeats joined), at most MAX_ANSWER_HEADERS, each value bounded. */
function boundedHeaders(raw: readonly string[]): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  let count = 0;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase().slice(0, MAX_HEADER_VALUE);
    const value = raw[i + 1]!;
    if (name in out) {
      out[name] = `${out[name]}, ${value}`.slice(0, MAX_HEADER_VALUE);
      continue;
    }
    if (count === MAX_ANSWER_HEADERS) continue;
    count++;
    out[name] = value.slice(0, MAX_HEADER_VALUE);
  }
  return { ...out };
}

/** The body's first EXCERPT_BYTES bytes as UTF-8 text, not splitting a character, from `head` (what was kept). */
function excerptOf(head: Buffer, read: number, ended: boolean): { excerpt: string; truncated: boolean } {
  if (head.length <= EXCERPT_BYTES) return { excerpt: head.toString('utf8'), truncated: !ended || read > head.length };
  let end = EXCERPT_BYTES;
  // Back to the start of the character that the bound cuts (continuation bytes are 10xxxxxx).
  while (end > 0 && (head[end]! & 0xc0) === 0x80) end--;
  return { excerpt: head.subarray(0, end).toString('utf8'), truncated: true };
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
