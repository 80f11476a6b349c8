// followEvents: the feed by long polls of GET /events, resumed after the last event yielded.
import { PlantStoreError, type ErrorBody, type FeedEvent, type PlantStoreClient } from './client.js';
import { RETRYABLE, retryAfterMs, retryPauses, type RetryOptions } from './retry.js';

export interface FollowEventsOptions extends RetryOptions {
  /** The id of the last event already handled; without it, from the oldest event the service keeps. */
  after?: string;
  /** Seconds each request waits for a new event (0 to 30, default 30). */
  wait?: number;
  /** Events per request at most (default 100). */
  limit?: number;
  /** Ends the iteration (a request waiting, or a pause between requests, is cancelled). */
  signal?: AbortSignal;
  /** The time in epoch milliseconds (default Date.now): how long a request took, and a Retry-After date. */
  now?: () => number;
}

/**
 * Every event after `after`, in commit order, then each new one moments after it commits, for as long as the
 * caller iterates: long polls GET /events, resuming after the last event yielded (keep its `id` to resume
 * after a restart). Ends when `signal` aborts.
 *
 * It never spins. A 429 or 503 (every waiting place taken, a rate limit, an instance stopping), a 502 or 504,
 * or a network failure is retried after `Retry-After` when the answer gives one, and never sooner than the
 * back-off (`backoff`), which grows with each failure in a row. An empty answer that came before its `wait`
 * was up (a server that is stopping, or one that does not wait) is followed by the same back-off, counted from
 * when the request began. Any other error throws PlantStoreError: 410 means the cursor is older than the
 * service keeps events (start again without `after`).
 */
export async function* followEvents(client: PlantStoreClient, options: FollowEventsOptions = {}): AsyncGenerator<FeedEvent, void, undefined> {
  let after = options.after;
  const limit = options.limit ?? 100;
  const wait = options.wait ?? 30;
  const signal = options.signal;
  const now = options.now ?? Date.now;
  const pauses = retryPauses(options, signal);
  // Requests in a row that brought nothing: the back-off's exponent.
  let idle = 0;
  const backoff = () => pauses.backoff(idle);
  const retry = pauses.pause;
  while (!signal?.aborted) {
    const started = now();
    let result;
    try {
      result = await client.GET('/events', { params: { query: { ...(after !== undefined && { after }), limit, wait } }, ...(signal && { signal }) });
    } catch (error) {
      if (signal?.aborted) return;
      // fetch rejects with a TypeError when no answer came (refused, reset, DNS); anything else is a bug to see.
      if (!(error instanceof TypeError)) throw error;
      idle++;
      await retry(backoff(), { error });
      continue;
    }
    const { error, response } = result;
    // A page (this asks for JSON): the document's other answer, a stream, is for Accept: text/event-stream.
    const data = result.data as Exclude<typeof result.data, string>;
    if (data === undefined) {
      if (!RETRYABLE.has(response.status)) throw new PlantStoreError(response.status, error as ErrorBody | undefined);
      idle++;
      await retry(Math.max(retryAfterMs(response, now()) ?? 0, backoff()), { status: response.status });
      continue;
    }
    if (data.length === 0) {
      const took = now() - started;
      // The whole wait passed without an event: a long poll as it should be; ask again at once.
      if (wait > 0 && took >= wait * 1000) {
        idle = 0;
        continue;
      }
      idle++;
      const delay = backoff() - took;
      if (delay > 0) await pauses.sleep(delay);
      continue;
    }
    idle = 0;
    for (const event of data) {
      yield event;
      after = event.id;
      if (signal?.aborted) return;
    }
  }
}
