// Real waiting, for tests about real time (a process, a socket, a load running); where the code under test
// reads an injected clock, move test/helpers/clock.ts instead.
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
