// Structured JSON logs. Tokens and bodies never reach them: request logs carry method, url and status only,
// and the Authorization header is redacted should anything ever log headers.
import pino, { type Logger } from 'pino';
import type { Config } from './config.js';

export function createLogger(config: Pick<Config, 'logLevel'>): Logger {
  return pino({
    level: config.logLevel,
    base: { service: 'plant-store' },
    redact: { paths: ['req.headers.authorization', 'headers.authorization', '*.authorization'], censor: '[redacted]' },
  });
}
