// Real waiting, for tests about real time (a process, a socket, a load running); where the code under test
// reads an injected clock, move test/helpers/clock.ts instead.
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Waits until `done()` holds (checked every 10 ms), failing with `what` after `ms`: for output another process writes when it will. */
export async function eventually(done: () => boolean, what: string, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!done()) {
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
    await sleep(10);
  }
}
