// What the store contract suites of plants (store-contract-*.test.ts) share: the int64 edges and the first
// integer above 2^53, the ids where an engine that rounds or truncates would show it.
export const MAX = 2n ** 63n - 1n;
export const MIN = -(2n ** 63n);
export const ABOVE_2_53 = 2n ** 53n + 1n;
