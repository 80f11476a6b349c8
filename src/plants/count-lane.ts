// The lane that `Prefer: count=exact` counts run in: one count at a time per process, whatever the engine, so
// that counting (which reads every match) takes at most one SQLite reader thread or one PostgreSQL connection
// of this process, never the event loop or the pool. Waiting counts are bounded per process and per token
// and taken in turn across tokens, so one token's loops delay another token's count by at most one count.
import { AppError } from '../errors/catalogue.js';

export interface CountLaneOptions {
  /** Counts that may wait in this process while one runs (COUNTS_MAX_WAITING); past it, 503. */
  maxWaiting: number;
  /** Counts one token (or JWT subject) may have waiting (COUNTS_MAX_WAITING_PER_TOKEN); past it, 429. */
  maxWaitingPerToken: number;
}

export interface CountLane {
  /** Counts waiting now, the running one aside (the counts_waiting metric). */
  readonly waiting: number;
  /**
   * Runs `count` when the lane is free and it is `principal`'s turn. Throws COUNTS_TOKEN_WAITING (429) or
   * COUNTS_WAITING_FULL (503), both with Retry-After, at once (not as a rejection) when it may not wait, so a
   * caller can refuse before doing anything else.
   */
  run<T>(principal: string, count: () => Promise<T>): Promise<T>;
}

type Waiter = () => void;

export function createCountLane(options: CountLaneOptions): CountLane {
  let running = false;
  let waiting = 0;
  // Each principal's waiting counts in arrival order; the map's order is the turn (a served principal with
  // more waiting goes to the back).
  const queues = new Map<string, Waiter[]>();

  function next(): void {
    const first = queues.entries().next();
    if (first.done) {
      running = false;
      return;
    }
    const [principal, queue] = first.value;
    queues.delete(principal);
    const start = queue.shift()!;
    if (queue.length > 0) queues.set(principal, queue);
    waiting--;
    start();
  }

  /** Runs a count that holds the lane (running is true), and hands the lane on when it ends. */
  async function settled<T>(count: () => Promise<T>): Promise<T> {
    try {
      return await count();
    } finally {
      next();
    }
  }

  return {
    get waiting() {
      return waiting;
    },
    run(principal, count) {
      if (!running) {
        running = true;
        return settled(count);
      }
      const own = queues.get(principal);
      // A count ends in about the time it took the one before: a second is the usual wait.
      if ((own?.length ?? 0) >= options.maxWaitingPerToken) throw new AppError('COUNTS_TOKEN_WAITING', undefined, { headers: { 'retry-after': '1' } });
      if (waiting >= options.maxWaiting) throw new AppError('COUNTS_WAITING_FULL');
      waiting++;
      return new Promise<void>((resolve) => {
        if (own) own.push(resolve);
        else queues.set(principal, [resolve]);
      }).then(() => settled(count));
    },
  };
}
