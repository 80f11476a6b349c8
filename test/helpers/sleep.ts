// Waiting in tests. `eventually` waits on a condition: what another process, a socket or a background task does
// when it will. `within` bounds a wait on something that happens (a process exiting) and ends when it does.
// `sleep` is real waiting, for tests about real time (pacing a load, proving that something does not happen
// within a bound): each use says why. Where the code under test reads an injected clock, move
// test/helpers/clock.ts instead.
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

type Truthy<T> = Exclude<T, false | 0 | '' | null | undefined>;

/**
 * Waits until `check()` gives a truthy value (checked now, then every `everyMs`) and returns it; fails with
 * `what` (a function: said with what it last saw) after `ms`. A check that throws fails at once.
 */
export async function eventually<T>(check: () => T | Promise<T>, what: string | (() => string), ms = 5000, everyMs = 10): Promise<Truthy<T>> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value as Truthy<T>;
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${typeof what === 'string' ? what : what()}`);
    await sleep(everyMs);
  }
}

/**
 * What `promise` resolves to, or `late` when it has not settled within `ms`. Resolves as soon as `promise` does,
 * and leaves no timer behind.
 */
export async function within<T, L>(promise: Promise<T>, ms: number, late: L): Promise<T | L> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<L>((resolve) => {
    timer = setTimeout(() => resolve(late), ms);
  });
  try {
    return await Promise.race([promise, bound]);
  } finally {
    clearTimeout(timer);
  }
}
