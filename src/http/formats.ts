// The string and number formats the document uses, as Ajv format definitions. Their own module, free of Ajv
// itself: the validators generated at build time (contract-build.ts) import it at run time.
import { fullFormats } from 'ajv-formats/dist/formats.js';

const INT64_BOUND = 2 ** 63;

/**
 * int64 bounds see the views that parseJson gives long literals, so an integer one past either end is rejected.
 * `uri` and `date-time` are ajv-formats' full definitions.
 */
export const CONTRACT_FORMATS = {
  uri: fullFormats.uri,
  'date-time': fullFormats['date-time'],
  int64: { type: 'number', validate: (n: number) => Number.isInteger(n) && n >= -INT64_BOUND && n <= INT64_BOUND },
  int32: { type: 'number', validate: (n: number) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31 },
} as const;
