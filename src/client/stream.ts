// streamEvents: the feed as Server-Sent Events over one long GET /events, reconnected with Last-Event-ID.
import { createParser } from 'eventsource-parser';
import { responseInt64 } from '../contract/schema.js';
import { parseJson, PlantStoreError, type ErrorBody, type FeedEvent, type PlantStoreClient } from './client.js';
import { RETRYABLE, retryAfterMs, retryPauses, type RetryOptions } from './retry.js';

/** An event as the stream sends it: the page's `id`, `type` and `data` (ids and versions as bigints). */
export type StreamedEvent = Pick<FeedEvent, 'id' | 'type' | 'data'>;

export interface StreamEventsOptions extends RetryOptions {
  /** The id of the last event already handled; without it, the stream starts with the events placed from now. */
  after?: string;
  /** Only events of these types (all by default). */
  types?: readonly FeedEvent['type'][];
  /** Only the events of this plant. */
  plant?: bigint;
  /** Ends the iteration (the stream is closed). */
  signal?: AbortSignal;
}

/** Where int64 values sit in one event's data: the page's paths without the array item and `data`. */
const STREAM_INT64 = (responseInt64['GET /events']?.['200'] ?? []).filter((p) => p.startsWith('/*/data')).map((p) => p.slice('/*/data'.length));

/**
 * Every event after `after` (or, without it, from now), then each new one as it is placed, over one long
 * response (GET /events as Server-Sent Events, read with `fetch` streaming, so it sends the token as every
 * request does, in Node.js and browsers). When the stream ends or breaks (a deploy, a proxy, the network) it
 * reconnects with Last-Event-ID, the last event yielded: a caller that keeps the id of the last event it
 * handled, and starts again with it, misses nothing and sees nothing twice. Reconnects wait the stream's
 * `retry:` (with jitter), and after failures in a row `Retry-After` when an answer gives one and never less than
 * the growing back-off. 400, 401, 403 and 410 (the cursor older than the service keeps) throw PlantStoreError.
 */
export async function* streamEvents(client: PlantStoreClient, options: StreamEventsOptions = {}): AsyncGenerator<StreamedEvent, void, undefined> {
  const { signal } = options;
  const { pause, jitter, backoff: backoffAfter } = retryPauses(options, signal);
  let last = options.after;
  // The stream's own retry: (until it says, the server's default).
  let retryMs = 2_000;
  let failures = 0;
  const backoff = () => backoffAfter(failures);
  const query = { ...(options.types && { types: options.types.join(',') }), ...(options.plant !== undefined && { plant: options.plant }) };
  while (!signal?.aborted) {
    let response: Response;
    let error: unknown;
    try {
      ({ response, error } = await client.GET('/events', {
        params: { query, header: last === undefined ? undefined : { 'Last-Event-ID': last } },
        headers: { accept: 'text/event-stream' },
        parseAs: 'stream',
        ...(signal && { signal }),
      }));
    } catch (err) {
      if (signal?.aborted) return;
      if (!(err instanceof TypeError)) throw err;
      failures++;
      await pause(Math.max(retryMs, backoff()), { error: err });
      continue;
    }
    if (!response.ok || !response.body) {
      if (!RETRYABLE.has(response.status)) throw new PlantStoreError(response.status, error as ErrorBody | undefined);
      failures++;
      await pause(Math.max(retryAfterMs(response) ?? 0, backoff()), { status: response.status });
      continue;
    }
    failures = 0;
    const arrived: StreamedEvent[] = [];
    const parser = createParser({
      onEvent: (m) => arrived.push({ id: m.id!, type: m.event as FeedEvent['type'], data: parseJson(m.data, STREAM_INT64) as FeedEvent['data'] }),
      onRetry: (ms) => (retryMs = ms),
    });
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let broke: unknown;
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        parser.feed(value);
        for (let e = arrived.shift(); e !== undefined; e = arrived.shift()) {
          yield e;
          last = e.id;
          if (signal?.aborted) return;
        }
      }
    } catch (err) {
      if (signal?.aborted) return;
      broke = err;
    } finally {
      // Stopped by the caller (return, break) or the end of the stream: the connection is let go.
      reader.cancel().catch(() => {});
    }
    // Ended by the server (shutdown, a reader cut off) or broken: back after its retry, from the last event.
    await pause(jitter(retryMs), broke === undefined ? {} : { error: broke });
  }
}
