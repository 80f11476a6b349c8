// GET /events as Server-Sent Events: the feed after a cursor, then every event as it is placed, on one response
// that stays open. The cursor is the event id, as on the page, so a reader that reconnects with Last-Event-ID
// resumes exactly. Framing is eventsource-encoder's (newlines in a field, comments); the stream itself (one write
// per read however many events it holds, one heartbeat timer per process, a reader that stops reading cut off
// rather than buffered) is here, since those decide what a stream costs.
import type { ServerResponse } from 'node:http';
import { encode, encodeComment } from 'eventsource-encoder';
import type { FeedEvent } from './event-log.js';
import type { FeedNotifier } from './feed-notifier.js';

export interface StreamOptions {
  /** Seconds between keep-alive comments on a stream that sent nothing meanwhile (EVENTS_HEARTBEAT_SECONDS). */
  heartbeatSeconds: number;
  /** What a client waits before reconnecting (the stream's `retry:` line), in ms. */
  retryMs: number;
  /** How long a reader may leave its socket full before it is cut off (it resumes with Last-Event-ID), in ms. */
  stallMs: number;
}

/** One event as the stream frames it: id, event (its type) and data (the feed's data, digit for digit). */
export function eventFrame(e: FeedEvent): string {
  return encode({ id: e.id, event: e.type, data: e.payload });
}

const KEEP_ALIVE = encodeComment('keep-alive');

/** The open streams of this process: one timer sends every idle one its keep-alive. */
export class StreamHub {
  private readonly open = new Set<OpenStream>();
  private timer?: NodeJS.Timeout;

  constructor(private readonly options: StreamOptions) {}

  get size(): number {
    return this.open.size;
  }

  add(stream: OpenStream): () => void {
    this.open.add(stream);
    this.timer ??= setInterval(() => this.beat(), this.options.heartbeatSeconds * 1000).unref();
    return () => {
      this.open.delete(stream);
      if (this.open.size === 0 && this.timer) {
        clearInterval(this.timer);
        this.timer = undefined;
      }
    };
  }

  private beat(): void {
    const quiet = Date.now() - this.options.heartbeatSeconds * 1000 + 100;
    for (const s of this.open) if (s.lastWrite <= quiet) s.keepAlive();
  }
}

/** A stream's response: writes that count as its activity, and the wait for a full socket to take more. */
export class OpenStream {
  lastWrite = Date.now();

  constructor(private readonly res: ServerResponse) {}

  /** Writes; false when the socket is full (wait for drained before the next write). */
  send(text: string): boolean {
    this.lastWrite = Date.now();
    return this.res.write(text);
  }

  /** A keep-alive, unless the socket is still full (the reader has something to read). */
  keepAlive(): void {
    if (!this.res.writableNeedDrain && !this.res.destroyed) this.send(KEEP_ALIVE);
  }

  /** Resolves true once the socket took what was written, false after `ms` or when `signal` aborts. */
  drained(ms: number, signal: AbortSignal): Promise<boolean> {
    if (!this.res.writableNeedDrain) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (ok: boolean) => {
        clearTimeout(timer);
        this.res.off('drain', onDrain);
        signal.removeEventListener('abort', onAbort);
        resolve(ok);
      };
      const onDrain = () => done(true);
      const onAbort = () => done(false);
      const timer = setTimeout(() => done(false), ms);
      this.res.on('drain', onDrain);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}

/** What a stream reads: the events after a position (a page's worth at most), and whether to wait. */
export interface StreamSource {
  readAfter(position: bigint): Promise<FeedEvent[]>;
  feed: FeedNotifier;
  /** Whether the stream's credential still verifies; asked once per heartbeat interval. */
  allowed?: () => boolean | Promise<boolean>;
  /** When the stream's credential expires (epoch ms): a ticket's expiresAt, a token's or a JWT's expiry. */
  until?: number;
}

export type StreamOutcome = 'ended' | 'stalled' | 'refused' | 'expired';

/**
 * Sends the events after `position`, then each event as it is placed, until the client leaves, the process
 * shuts down (`released`), the reader stalls, its credential no longer verifies (asked every heartbeat), or
 * it expires (at `until`, to the millisecond). The response's head is already written.
 */
export async function runStream(stream: OpenStream, from: bigint, source: StreamSource, options: StreamOptions, gone: AbortSignal): Promise<StreamOutcome> {
  let position = from;
  const every = options.heartbeatSeconds * 1000;
  const until = source.until ?? Number.POSITIVE_INFINITY;
  let nextCheck = Date.now() + every;
  for (;;) {
    if (gone.aborted) return 'ended';
    // An expired credential's stream ends at its expiry, not at the next heartbeat after it.
    if (Date.now() >= until) return 'expired';
    // A revoked token's stream, or an expired ticket's, ends: its reconnect is refused, and says why.
    if (source.allowed && Date.now() >= nextCheck) {
      nextCheck = Date.now() + every;
      if (!(await source.allowed())) return 'refused';
    }
    const wakes = source.feed.wakes;
    const events = await source.readAfter(position);
    if (events.length > 0) {
      position = events.at(-1)!.position;
      let frames = '';
      for (const e of events) frames += eventFrame(e);
      // A socket still full after the stall bound: the reader is not reading. Cut off (the caller destroys the
      // socket), it resumes from its last id. So a stream holds its socket's buffer and one read at most.
      if (!stream.send(frames) && !(await stream.drained(options.stallMs, gone))) return 'stalled';
      continue;
    }
    // Placed while reading: read again rather than wait for the next.
    if (source.feed.wakes !== wakes) continue;
    if ((await source.feed.next(Math.min(every, until - Date.now()), gone)) === 'released') return 'ended';
  }
}
