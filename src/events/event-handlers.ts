// GET /events: the feed after a cursor, a page at a time, waiting for the next event when asked to.
import { traceFromText } from '../tracing/spans.js';
import type { OutgoingHttpHeaders } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors/catalogue.js';
import type { OperationRequest } from '../http/contract-routes.js';
import { unknownCursor, type EventFilter, type EventLogStore, type FeedEvent } from './event-log.js';
import { eventIdTime } from './event.js';
import type { FeedNotifier } from './feed-notifier.js';
import type { WaitPlaces } from './waiting.js';
import type { TicketService } from '../auth/stream-tickets.js';
import { OpenStream, runStream, StreamHub, type StreamOptions, type StreamOutcome } from './event-stream.js';
import { prefersEventStream } from '../http/accept.js';

export interface EventFeedOptions {
  /** How long events are kept, for the 410 message (EVENT_RETENTION). */
  retentionMs: number;
  /** The places of waiting requests (per process and per token). */
  places: WaitPlaces;
  /** Bytes of JSON a page holds at most, beyond its first event (EVENTS_PAGE_BYTES). */
  pageBytes: number;
  /**
   * The places of open streams (per process and per token), how streams run, and the access line of a stream
   * whose response never finished (its reader left, or was cut off): Fastify writes none then.
   */
  streams: {
    places: WaitPlaces;
    ended: (request: FastifyRequest, reply: FastifyReply) => void;
    /** Whether the credential a stream was opened with still verifies (asked once per heartbeat interval). */
    allowed?: (request: FastifyRequest) => boolean | Promise<boolean>;
  } & StreamOptions;
  /** Makes stream tickets (POST /events/tickets). */
  tickets: TicketService;
}

/** An event id, as `after` takes it (the document's pattern): what Last-Event-ID must be. */
const EVENT_ID = /^msg_[A-Za-z0-9_-]{22}$/;

/**
 * Last-Event-ID as the document declares it, checked on a page and a stream alike (only a stream reads from it):
 * an event id, or undefined when absent or empty (the empty id of Server-Sent Events means no last event). Any
 * other value is 400.
 */
function lastEventIdOf(request: FastifyRequest): string | undefined {
  const header = request.headers['last-event-id'];
  if (header === undefined || header === '') return undefined;
  if (typeof header !== 'string' || !EVENT_ID.test(header)) {
    throw new AppError('VALIDATION_FAILED', 'headers/last-event-id must be an event id (msg_ and 22 base64url characters), as the stream sent it.');
  }
  return header;
}
/** How often a stream whose cursor is not placed yet looks again (only for a moment after its commit). */
const PENDING_LOOK_MS = 200;

/**
 * The page as JSON text, and how many of `events` it holds: up to `limit`, ending before the event that would
 * take it past `maxBytes` (UTF-8), but never empty while there are events. `data` is the stored body, sent as
 * it is (ids digit for digit).
 */
export function pageJson(events: readonly FeedEvent[], limit: number, maxBytes: number): { json: string; count: number } {
  let out = '[';
  let bytes = 2; // the brackets
  let count = 0;
  for (; count < events.length && count < limit; count++) {
    const e = events[count]!;
    const item = `{"id":${JSON.stringify(e.id)},"type":${JSON.stringify(e.type)},"createdAt":"${e.createdAt.toISOString()}",${traceMembers(e.trace)}"data":${e.payload}}`;
    const size = Buffer.byteLength(item) + (count > 0 ? 1 : 0);
    if (count > 0 && bytes + size > maxBytes) break;
    out += count > 0 ? `,${item}` : item;
    bytes += size;
  }
  return { json: out + ']', count };
}

/** `traceparent` and `tracestate` members of a traced write's event ('' for an untraced one). */
function traceMembers(text: string | undefined): string {
  const trace = traceFromText(text);
  if (!trace) return '';
  return `"traceparent":${JSON.stringify(trace.traceparent)},${trace.tracestate ? `"tracestate":${JSON.stringify(trace.tracestate)},` : ''}`;
}

/** EVENT_RETENTION in words, in the largest unit that says it exactly (it may be set in seconds). */
export function spelledDuration(ms: number): string {
  for (const [unit, size] of [['day', 86_400_000], ['hour', 3_600_000], ['minute', 60_000]] as const) {
    const n = ms / size;
    if (Number.isInteger(n)) return `${n} ${unit}${n === 1 ? '' : 's'}`;
  }
  const s = Math.round(ms / 1_000);
  return `${s} second${s === 1 ? '' : 's'}`;
}

/** The filters of a page or stream request (`types`, `plant`), or undefined for the whole feed. */
function filterOf(query: { types?: string; plant?: bigint }): EventFilter | undefined {
  if (query.types === undefined && query.plant === undefined) return undefined;
  return {
    // The schema's pattern admits only the three types, comma-separated; a type named twice counts once.
    ...(query.types !== undefined && { types: [...new Set(query.types.split(','))] }),
    ...(query.plant !== undefined && { plant: query.plant }),
  };
}

/** A filter as part of a shared read's key. */
function filterKey(filter: EventFilter | undefined): string {
  return filter ? `${filter.types?.join(',') ?? ''}/${filter.plant ?? ''}` : '';
}

/** Events a stream reads at once: one write to its socket, however many. */
const STREAM_READ_EVENTS = 1_000;

/** The stream's first line: how long its client waits before reconnecting. */
function encodeRetry(ms: number): string {
  return `retry: ${ms}\n\n`;
}

type Page = { events: FeedEvent[]; page: { json: string; count: number } };

/**
 * What the readers one wake released read, shared among them: they were all waiting at the end of the feed, so
 * most ask for the same page, and each reading it (and writing its JSON) made a wake of 1,000 readers cost a
 * thousand reads. Kept for the wake's own turn of the event loop only: a reader that asks later reads afresh.
 */
class WakeReads {
  readonly positions = new Map<string, Promise<bigint | null | undefined>>();
  readonly pages = new Map<string, Promise<Page>>();
  readonly streams = new Map<string, Promise<FeedEvent[]>>();
  constructor(readonly wake: number) {}
}

export function eventHandlers(store: EventLogStore, feed: FeedNotifier, options: EventFeedOptions) {
  const hub = new StreamHub(options.streams);
  let shared: WakeReads | undefined;
  const readsOf = (wake: number): WakeReads => {
    if (shared?.wake !== wake) {
      const reads = (shared = new WakeReads(wake));
      setImmediate(() => {
        if (shared === reads) shared = undefined;
      });
    }
    return shared;
  };
  const once = <T>(map: Map<string, Promise<T>>, key: string, read: () => Promise<T>): Promise<T> => {
    let p = map.get(key);
    if (!p) map.set(key, (p = read()));
    return p;
  };
  const readPage = async (position: bigint | null, limit: number, filter: EventFilter | undefined): Promise<Page> => {
    const events = await store.readAfter(position, limit + 1, options.pageBytes, filter);
    return { events, page: pageJson(events, limit, options.pageBytes) };
  };

  /** The position after which to read, or null (from the oldest); undefined while the cursor has none yet. */
  async function positionAfter(after: string | undefined, from: 'after' | 'Last-Event-ID' = 'after'): Promise<bigint | null | undefined> {
    if (after === undefined) return null;
    const cursor = await store.cursor(after);
    if (cursor.kind === 'at') return cursor.position;
    if (cursor.kind === 'pending') return undefined;
    const unknown = unknownCursor(cursor, eventIdTime(after));
    if (unknown.kind === 'restored') {
      throw new AppError(
        'EVENTS_RESTORED',
        `The event ${after} is not in the feed: the store was restored from a backup at ${unknown.restore.restoredAt.toISOString()}, and the events made after that backup were lost with their changes. ` +
          'Start again from the oldest event kept: GET /events without after, and read the plants again (GET /plants), which are as the backup held them.',
      );
    }
    if (unknown.kind === 'gone') {
      throw new AppError('EVENTS_GONE', `The event ${after} is no longer in the feed: events are kept for ${spelledDuration(options.retentionMs)} (EVENT_RETENTION). Start again from the oldest event kept: GET /events without after.`);
    }
    const named = from === 'after' ? `after=${after}` : `Last-Event-ID ${after}`;
    throw new AppError('EVENT_NOT_FOUND', `${named} names no event of the feed; use the id of an event the feed or a webhook gave you.`);
  }

  /** Streams at one position after a wake read together, as waiting pages do. */
  const streamRead = (position: bigint, filter: EventFilter | undefined): Promise<FeedEvent[]> => {
    const reads = readsOf(feed.wakes);
    return once(reads.streams, `${position} ${filterKey(filter)}`, () => store.readAfter(position, STREAM_READ_EVENTS, options.pageBytes, filter));
  };

  /**
   * GET /events with Accept: text/event-stream. Everything that can refuse the request (the cursor, the places)
   * is decided before the head is written, so a refusal is an ordinary Error answer; once streaming, an error
   * ends the stream (the client resumes with Last-Event-ID).
   */
  async function streamEvents(request: OperationRequest<'listEvents'>, reply: FastifyReply, lastId: string | undefined): Promise<void> {
    const cursor = lastId ?? request.query.after;
    const cursorName = lastId !== undefined ? 'Last-Event-ID' : 'after';
    // The reader left: its socket closed, or it sent its FIN (a killed curl, a reloaded page, or a client that
    // only closed its sending side). A FIN shows only as the socket's end, since the server keeps half-open
    // connections (http/in-order.ts), and writes to a socket whose peer left fail only at the second keep-alive:
    // so the stream ends on either at once, and its place is free again.
    const gone = new AbortController();
    const onClose = () => gone.abort();
    const socket = request.raw.socket;
    reply.raw.once('close', onClose);
    socket.once('end', onClose);
    if (socket.readableEnded || socket.destroyed) gone.abort();
    let release: (() => void) | undefined;
    let removal: (() => void) | undefined;
    try {
      // Without a cursor, only what is placed from now on.
      let from = cursor === undefined ? await store.lastPosition() : await positionAfter(cursor, cursorName);
      while (from === undefined) {
        if ((await feed.next(PENDING_LOOK_MS, gone.signal)) === 'released') throw new AppError('SHUTTING_DOWN');
        from = await positionAfter(cursor, cursorName);
      }
      release = options.streams.places.take(request.tokenId ?? '', Number.POSITIVE_INFINITY);
      reply.raw.writeHead(200, {
        ...(reply.getHeaders() as OutgoingHttpHeaders),
        'content-type': 'text/event-stream; charset=utf-8',
        // Proxies that buffer answers (nginx) pass this one on as it comes.
        'x-accel-buffering': 'no',
      });
      const stream = new OpenStream(reply.raw);
      removal = hub.add(stream);
      stream.send(encodeRetry(options.streams.retryMs));
      let outcome: StreamOutcome;
      try {
        const filter = filterOf(request.query);
        const check = options.streams.allowed;
        // A ticket's stream ends at the ticket's expiresAt; a token's or a JWT's at its expiry.
        const until = request.principal?.expiresAt?.getTime();
        const source = {
          readAfter: (position: bigint) => streamRead(position, filter),
          feed,
          ...(check && { allowed: () => check(request) }),
          ...(until !== undefined && { until }),
        };
        outcome = await runStream(stream, from ?? -1n, source, options.streams, gone.signal);
      } catch (err) {
        request.log.warn({ err }, 'event stream ended by an error; its reader resumes with Last-Event-ID');
        outcome = 'ended';
      }
      if (outcome === 'refused') request.log.info('event stream ended: its token or ticket no longer verifies (revoked or expired)');
      if (outcome === 'expired') request.log.info('event stream ended: its ticket or token expired');
      if (outcome === 'stalled') {
        request.log.info('event stream cut off: its reader read nothing for the stall bound');
        reply.raw.destroy();
      } else reply.raw.end();
      // Fastify writes the access line of a response that finished; one cut off, or whose reader's socket
      // closed first, gets its line here, once.
      const line = () => {
        if (!reply.raw.writableFinished) options.streams.ended(request, reply);
      };
      if (reply.raw.closed) line();
      else reply.raw.once('close', line);
    } finally {
      removal?.();
      release?.();
      reply.raw.removeListener('close', onClose);
      socket.removeListener('end', onClose);
    }
  }

  return {
    async createEventTicket(request: OperationRequest<'createEventTicket'>, reply: FastifyReply) {
      const { ticket, expiresAt } = await options.tickets.issue(request.principal!);
      return reply.code(201).send({ ticket, expiresAt: expiresAt.toISOString() });
    },

    async listEvents(request: OperationRequest<'listEvents'>, reply: FastifyReply) {
      const lastId = lastEventIdOf(request);
      // Accept by its q-values: `text/event-stream;q=0.5, application/json` prefers a page.
      if (request.method === 'GET' && prefersEventStream(request.headers.accept)) return streamEvents(request, reply, lastId);
      const { after } = request.query;
      const limit = request.query.limit as number; // defaulted by the schema
      const filter = filterOf(request.query);
      const waitMs = (request.query.wait as number) * 1000;
      const deadline = Date.now() + waitMs;
      let read: Page = { events: [], page: { json: '[]', count: 0 } };
      // Set after a wake by new events: this request then reads what the others that wake released read.
      let woken: WakeReads | undefined;
      // A client that goes away ends its wait, freeing its place at once. A reset ends the response; a FIN (the
      // client closed the connection, as `curl --max-time` does, or only its sending side) shows only as the
      // socket's end, since the server keeps half-open connections to answer pipelined requests
      // (http/in-order.ts). Only a waiting request listens for it, and answers at once: whatever the client
      // pipelined after it is still answered, in order.
      const gone = new AbortController();
      const onClose = () => gone.abort();
      const socket = request.raw.socket;
      reply.raw.once('close', onClose);
      let release: (() => void) | undefined;
      try {
        for (;;) {
          const position = await (woken ? once(woken.positions, after ?? '', () => positionAfter(after)) : positionAfter(after));
          if (position !== undefined) {
            read = await (woken ? once(woken.pages, `${position} ${limit} ${filterKey(filter)}`, () => readPage(position, limit, filter)) : readPage(position, limit, filter));
          }
          const left = deadline - Date.now();
          if (read.events.length > 0 || left <= 0 || gone.signal.aborted) break;
          if (!release) {
            if (socket.readableEnded || socket.destroyed) break;
            // Only a request that would wait needs a place: one with events to read gets them whatever the caps.
            release = options.places.take(request.tokenId ?? '', deadline);
            socket.once('end', onClose);
          }
          // Woken by events or by the time: look again. Released (a shutdown, or the client left): answer now.
          const wake = await feed.next(left, gone.signal);
          if (wake === 'released') break;
          woken = wake === 'events' ? readsOf(feed.wakes) : undefined;
        }
      } finally {
        release?.();
        reply.raw.removeListener('close', onClose);
        socket.removeListener('end', onClose);
      }
      const { events, page } = read;
      // Cut at `limit` (the extra row read says more follow) or at the byte budget: the rest is behind Link.
      if (page.count < events.length) {
        const next = new URLSearchParams({ after: events[page.count - 1]!.id, limit: String(limit) });
        // The next page keeps the filters, so following Link reads the same events a stream would send.
        if (request.query.types !== undefined) next.set('types', request.query.types);
        if (request.query.plant !== undefined) next.set('plant', request.query.plant.toString());
        reply.header('link', `</events?${next}>; rel="next"`);
      }
      return reply.type('application/json; charset=utf-8').send(page.json);
    },
  };
}
