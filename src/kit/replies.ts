// Requests sent over a message channel and their replies, matched by id: what the write worker's transport
// (storage/sqlite/write-transports.ts) and a cluster worker's link to its primary (process/worker-link.ts) both
// need. One place for the ids, the replies awaited, their deadlines and their failure when the other side goes.

/**
 * What a request gets when it cannot be answered: it could not be sent, or no reply came in time. Returns the
 * value to resolve with, or throws what to reject with.
 */
export type Fallback<R> = (why: 'unsent' | 'timeout') => R;

export interface AskOptions<R> {
  /** How long to wait for the reply before the fallback answers; none: wait until a reply or `failAll`. */
  timeoutMs?: number;
  fallback: Fallback<R>;
}

export class PendingReplies<R> {
  private seq = 0;
  private readonly waiting = new Map<number, { resolve: (reply: R) => void; reject: (err: unknown) => void; timer?: NodeJS.Timeout }>();

  /** Requests awaiting their reply. */
  get size(): number {
    return this.waiting.size;
  }

  /**
   * Sends a request under a new id (`send` returns false when it cannot go) and resolves with its reply, or with
   * what the fallback makes of a request that could not go or was not answered in time.
   */
  ask(send: (id: number) => boolean, options: AskOptions<R>): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      const id = ++this.seq;
      const entry: { resolve: (reply: R) => void; reject: (err: unknown) => void; timer?: NodeJS.Timeout } = { resolve, reject };
      this.waiting.set(id, entry);
      if (options.timeoutMs !== undefined) {
        entry.timer = setTimeout(() => this.settle(id, () => options.fallback('timeout')), options.timeoutMs);
        entry.timer.unref();
      }
      let sent = false;
      try {
        sent = send(id);
      } finally {
        if (!sent) this.settle(id, () => options.fallback('unsent'));
      }
    });
  }

  /** Delivers the reply to request `id`; false when none waits (it was answered, timed out or failed). */
  answer(id: number, reply: R): boolean {
    return this.settle(id, () => reply);
  }

  /** Fails request `id` with `err` (the other side answered that it could not); false when none waits. */
  fail(id: number, err: unknown): boolean {
    return this.settle(id, () => {
      throw err;
    });
  }

  /** Fails every request still waiting: the other side is gone. */
  failAll(err: unknown): void {
    const waiting = [...this.waiting.values()];
    this.waiting.clear();
    for (const w of waiting) {
      clearTimeout(w.timer);
      w.reject(err);
    }
  }

  private settle(id: number, outcome: () => R): boolean {
    const w = this.waiting.get(id);
    if (!w) return false;
    this.waiting.delete(id);
    clearTimeout(w.timer);
    try {
      w.resolve(outcome());
    } catch (err) {
      w.reject(err);
    }
    return true;
  }
}
