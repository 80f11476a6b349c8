// The sequencing pass a running service makes in the background (src/events/sequencer.ts), made by hand for
// tests that drive a store directly: after it, every committed event has its feed position and deliveries.
// And the count of waiting feed readers, for tests of long polls; and a stream (GET /events as Server-Sent
// Events) read as a client reads it, with eventsource-parser.
import type { Clock } from '../../src/kit/clock.js';
import type { Store } from '../../src/storage/store.js';
import type { TestApp } from './app.js';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { eventually } from './sleep.js';

export async function sequenced(store: Store, clock?: Clock): Promise<number> {
  let events = 0;
  for (;;) {
    const pass = await store.events.sequence(100_000, new Date(clock ? clock.now() : Date.now()));
    events += pass.events;
    if (!pass.more) return events;
  }
}

/**
 * The app's events_waiting gauge as a client scrapes it (a token with metrics:read is made for it), and a wait
 * until it reads `n`: how a test knows that its long polls hold their places, or have given them up.
 */
export async function eventsWaiting(s: TestApp): Promise<{ now(): Promise<number>; is(n: number): Promise<void> }> {
  const { secret } = await s.tokens.create({ name: 'metrics', scopes: ['metrics:read'] });
  const now = async () => {
    const text = await (await fetch(`${s.url}/metrics`, { headers: { authorization: `Bearer ${secret}` } })).text();
    return Number(/^plant_store_events_waiting (\d+)$/m.exec(text)?.[1]);
  };
  return {
    now,
    async is(n) {
      let value = NaN;
      await eventually(async () => (value = await now()) === n, () => `events_waiting stayed ${value}, not ${n}`, 10_000);
    },
  };
}

export interface Stream {
  status: number;
  headers: Headers;
  /** The Error body of a refused stream. */
  error?: { error: number; message: string };
  messages: EventSourceMessage[];
  comments: string[];
  retry?: number;
  /** Resolves when the server ends the stream (or the reader closes it). */
  ended: Promise<'ended' | 'closed'>;
  close(): void;
  /** Waits until `n` events arrived. */
  received(n: number): Promise<EventSourceMessage[]>;
}

/** GET /events with Accept: text/event-stream, parsed as it arrives; `headers` may carry Last-Event-ID. */
export async function openStream(url: string, token: string, headers: Record<string, string> = {}, query = ''): Promise<Stream> {
  const reader = new AbortController();
  const res = await fetch(`${url}/events${query}`, {
    // No token: a ticket in `query` instead (what EventSource sends).
    headers: { ...(token !== '' && { authorization: `Bearer ${token}` }), accept: 'text/event-stream', ...headers },
    signal: reader.signal,
  });
  const stream: Stream = {
    status: res.status,
    headers: res.headers,
    messages: [],
    comments: [],
    ended: Promise.resolve('ended'),
    close: () => reader.abort(),
    received: (n) => eventually(() => stream.messages.length >= n && stream.messages, `${n} events on the stream (${stream.messages.length} so far)`),
  };
  if (res.status !== 200) {
    stream.error = (await res.json()) as Stream['error'];
    return stream;
  }
  const parser = createParser({
    onEvent: (m) => stream.messages.push(m),
    onComment: (c) => stream.comments.push(c),
    onRetry: (ms) => (stream.retry = ms),
  });
  stream.ended = (async () => {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of res.body!) parser.feed(decoder.decode(chunk as Uint8Array, { stream: true }));
      return 'ended';
    } catch (err) {
      if (reader.signal.aborted) return 'closed';
      throw err;
    }
  })();
  return stream;
}
