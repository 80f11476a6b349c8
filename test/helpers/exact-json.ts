// Reading JSON text as the service means it: int64 ids beyond 2^53 must keep every digit.

/** JSON text with every integer literal as its exact bigint (the reviver sees each literal's source text). */
export function parseExact(text: string): unknown {
  return JSON.parse(text, (_key, value, context?: { source?: string }) =>
    typeof value === 'number' && /^-?\d+$/.test(context?.source ?? '') ? BigInt(context!.source!) : value,
  );
}
