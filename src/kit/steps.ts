// A transaction's work written once above the engines, over a small port of statements each engine implements:
// the work is a generator of statement steps; a synchronous driver runs them inside its transaction (runSteps),
// an asynchronous one awaits each on its transaction's connection (runStepsAsync). Transactions, locks and
// fsync settings stay in the engine; the rules stay in the feature that yields the steps.

type Fn = (...args: any[]) => unknown;
type Port<S> = { [K in keyof S]: Fn };

/** One statement of port S to run: its name and arguments. */
export type Step<S> = { [K in keyof S]: { name: K; args: S[K] extends Fn ? Parameters<S[K]> : never } }[keyof S];

/** Work over port S that ends with a T. */
export type Steps<S, T> = Generator<Step<S>, T, unknown>;

/** The same port, each statement awaited (an engine whose driver is asynchronous). */
export type AsyncStatements<S> = { [K in keyof S]: S[K] extends Fn ? (...args: Parameters<S[K]>) => Promise<ReturnType<S[K]>> : never };

/** The step function of port S: `yield* statement('name', ...args)` runs it and gives its result. */
export function statementsOf<S extends Port<S>>() {
  return function* statement<K extends keyof S>(name: K, ...args: Parameters<S[K]>): Generator<Step<S>, ReturnType<S[K]>, unknown> {
    return (yield { name, args } as unknown as Step<S>) as ReturnType<S[K]>;
  };
}

/** Runs the steps on a synchronous driver, inside the caller's transaction. */
export function runSteps<S extends Port<S>, T>(steps: Steps<S, T>, statements: S): T {
  let next = steps.next();
  while (!next.done) next = steps.next((statements[next.value.name] as Fn)(...next.value.args));
  return next.value;
}

/** Runs the steps one after another on an asynchronous driver, inside the caller's transaction. */
export async function runStepsAsync<S extends Port<S>, T>(steps: Steps<S, T>, statements: AsyncStatements<S>): Promise<T> {
  let next = steps.next();
  while (!next.done) next = steps.next(await (statements[next.value.name] as Fn)(...next.value.args));
  return next.value;
}
