// The dispatcher's background loop: a look at the outbox now and on every wake(), which costs a flag and at most
// one setImmediate however many arrive, and after each look a sleep until the next one is due.

export interface DispatchLoop {
  /** Starts looking: a first look now. Once stopped, it does not start again. */
  start(): void;
  /** Stops looking; a look under way finishes. */
  stop(): void;
  /** Looks again soon (coalesced); nothing before start() or after stop(). */
  wake(): void;
}

/** Runs `look`, then sleeps `nextLookIn()` ms (or until wake()), while started. */
export function createDispatchLoop(look: () => Promise<unknown>, nextLookIn: () => Promise<number>): DispatchLoop {
  let running = false;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let wakeScheduled = false;

  async function tick(): Promise<void> {
    if (!running) return;
    await look();
    if (!running) return;
    const delay = await nextLookIn();
    clearTimeout(timer);
    timer = setTimeout(() => void tick(), delay);
    timer.unref();
  }

  function wake(): void {
    if (!running || wakeScheduled) return;
    wakeScheduled = true;
    setImmediate(() => {
      wakeScheduled = false;
      void tick();
    });
  }

  return {
    start() {
      if (running || stopped) return;
      running = true;
      wake();
    },
    stop() {
      stopped = true;
      running = false;
      clearTimeout(timer);
    },
    wake,
  };
}
