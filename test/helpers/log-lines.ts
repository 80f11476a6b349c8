// The service's logger writing into an array: each line parsed as the JSON an operator's tools read.
import { Writable } from 'node:stream';
import type { Logger } from 'pino';
import type { Config } from '../../src/config.js';
import { createLogger } from '../../src/observations/logger.js';

export function capturedLogger(logLevel: Config['logLevel'] = 'info'): { lines: Record<string, any>[]; logger: Logger } {
  const lines: Record<string, any>[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l));
      done();
    },
  });
  return { lines, logger: createLogger({ logLevel }, stream) };
}
