// Structured JSON logs. Tokens and bodies never reach them: request logs carry method, path and status only,
// and an Authorization header is censored should anything ever log headers.
import pino, { type Bindings, type ChildLoggerOptions, type DestinationStream, type Level, type Logger } from 'pino';
import type { Config } from './config.js';

const CENSORED = '[redacted]';

/**
 * Censors `authorization` one level down (`{ headers: { authorization } }`) and under `req.headers`, without
 * touching the caller's object. Replaces pino's `redact` option, which clones and re-parses its paths on
 * every line (about a tenth of a GET's CPU time, measured in issue 5); a log line holds a handful of fields,
 * so looking at each is cheap.
 */
export function censorAuthorization(fields: Record<string, unknown>): Record<string, unknown> {
  let out = fields;
  for (const key of Object.keys(fields)) {
    const value = fields[key];
    if (value === null || typeof value !== 'object') continue;
    let censored: Record<string, unknown> | undefined;
    if ('authorization' in value) censored = { ...(value as object), authorization: CENSORED };
    const headers = (value as { headers?: unknown }).headers;
    if (key === 'req' && headers !== null && typeof headers === 'object' && 'authorization' in headers) {
      censored = { ...(censored ?? value), headers: { ...headers, authorization: CENSORED } };
    }
    if (censored) {
      if (out === fields) out = { ...fields };
      out[key] = censored;
    }
  }
  return out;
}

/**
 * Standard output, written asynchronously in batches rather than one blocking write per line. pino flushes
 * what is left synchronously when the process exits; a SIGKILL loses at most the last 100 ms of lines. Should standard output stop draining,
 * at most `maxBufferBytes` wait in memory and later lines are dropped rather than stalling requests.
 */
function stdoutDestination(maxBufferBytes = 16 * 1024 * 1024): DestinationStream {
  // Written once 4 KiB are waiting or 100 ms have passed, whichever is first: one write per line cost a GET
  // 6% of its CPU time even into /dev/null.
  return pino.destination({ dest: 1, sync: false, minLength: 4096, periodicFlush: 100, maxLength: maxBufferBytes });
}

export function createLogger(config: Pick<Config, 'logLevel'>, destination: DestinationStream = stdoutDestination()): Logger {
  return pino(
    {
      level: config.logLevel,
      base: { service: 'plant-store' },
      formatters: { log: censorAuthorization },
    },
    destination,
  );
}

const LEVELS: readonly Level[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'];

/**
 * A request's logger (Fastify's childLoggerFactory), made into a pino child only when something logs through
 * it: the access line is written by the root logger with the request id as a field, so a request that logs
 * nothing else never pays for a child (its bindings are serialized when it is made; measured in issue 5).
 */
export class LazyChildLogger {
  #child?: Logger;
  constructor(
    private readonly parent: Logger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  get real(): Logger {
    return (this.#child ??= this.parent.child(this.bindings, this.options));
  }
  get level(): string {
    return this.#child?.level ?? this.options.level ?? this.parent.level;
  }
  set level(level: string) {
    this.real.level = level;
  }
  child(bindings: Bindings, options?: ChildLoggerOptions): Logger {
    return this.real.child(bindings, options);
  }
  isLevelEnabled(level: string): boolean {
    return this.#child ? this.#child.isLevelEnabled(level) : this.parent.isLevelEnabled(level);
  }
  declare fatal: Logger['fatal'];
  declare error: Logger['error'];
  declare warn: Logger['warn'];
  declare info: Logger['info'];
  declare debug: Logger['debug'];
  declare trace: Logger['trace'];
  silent(): void {}
}
for (const level of LEVELS) {
  Object.defineProperty(LazyChildLogger.prototype, level, {
    value: function (this: LazyChildLogger, ...args: unknown[]) {
      // A line below the level makes no child.
      if (!this.isLevelEnabled(level)) return;
      (this.real[level] as (...a: unknown[]) => void)(...args);
    },
  });
}
