// Where GET /events requests that wait (long polls) hear of new events: told by this process's sequencer, or
// by whoever places them elsewhere (a shared writer's primary, another PostgreSQL instance), and released at
// once when a shutdown begins.

export type FeedWake = 'events' | 'timeout' | 'released';

export interface FeedNotifier {
  /** Events joined the feed: every waiting reader looks again. */
  placed(): void;
  /** How many times events were placed: the readers a wake releases may share what they read for it. */
  readonly wakes: number;
  /**
   * Resolves when events were placed, after `ms`, when `signal` aborts, or when readers are released (a
   * shutdown): `events`, `timeout` or `released`.
   */
  next(ms: number, signal?: AbortSignal): Promise<FeedWake>;
  /** Releases every waiting reader, and answers later waits at once (a shutdown has begun). */
  release(): void;
}

export function createFeedNotifier(): FeedNotifier {
  const waiters = new Set<(why: 'events' | 'released') => void>();
  let released = false;
  let wakes = 0;
  const wakeAll = (why: 'events' | 'released') => {
    const all = [...waiters];
    waiters.clear();
    for (const w of all) w(why);
  };
  return {
    placed() {
      wakes++;
      wakeAll('events');
    },
    get wakes() {
      return wakes;
    },
    next(ms, signal) {
      if (released || signal?.aborted) return Promise.resolve('released');
      return new Promise((resolve) => {
        const done = (why: FeedWake) => {
          clearTimeout(timer);
          waiters.delete(done);
          signal?.removeEventListener('abort', aborted);
          resolve(why);
        };
        const aborted = () => done('released');
        const timer = setTimeout(() => done('timeout'), ms);
        waiters.add(done);
        signal?.addEventListener('abort', aborted, { once: true });
      });
    },
    release() {
      released = true;
      wakeAll('released');
    },
  };
}
