// Structured logs: JSON lines, or readable lines when standard output is a terminal. Tokens and bodies never reach them: request logs carry method, path and status only,
// and an Authorization header is censored should anything ever log headers.
import pino, { type Bindings, type ChildLoggerOptions, type DestinationStream, type Level, type Logger } from 'pino';
import { writeSync } from 'node:fs';
import { tracing } from '../tracing/tracing-switch.js';

const CENSORED = '[redacted]';

/**
 * Censors `authorization` one level down (`{ headers: { authorization } }`) and under `req.headers`, without
 * touching the caller's object. Replaces pino's `redact` option, which clones and re-parses its paths on
 * every line (measured: about a tenth of a GET's CPU time); a log line holds a handful of fields,
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

/** The most one write of standard output takes: far more than a turn of the event loop writes under load. */
const WRITE_BYTES = 256 * 1024;
/** Lines handed over at once: once per turn, or sooner when a turn writes this many characters. */
const PASS_CHARS = 64 * 1024;

/**
 * Standard output, written asynchronously in batches rather than one blocking write per line. What is waiting
 * is written synchronously when the process exits; a SIGKILL loses at most the last 100 ms of lines. Should
 * standard output stop draining, at most `maxBufferBytes` wait in memory and later lines are dropped rather
 * than stalling requests.
 */
function stdoutDestination(maxBufferBytes = 16 * 1024 * 1024): DestinationStream {
  // Written once 4 KiB are waiting or 100 ms have passed, whichever is first: one write per line cost a GET
  // 6% of its CPU time even into /dev/null. One write at a time, each finishing a turn of the event loop later:
  // at sonic-boom's default of 16 KiB a write, a turn that answers a few hundred connections wrote more lines
  // than one write takes, and megabytes of them waited long enough to reach V8's old generation (measured at
  // GET c=256). A write takes everything waiting, up to WRITE_BYTES.
  return new LineBatcher(() => pino.destination({ dest: 1, sync: false, minLength: 4096, maxWrite: WRITE_BYTES, periodicFlush: 100, maxLength: maxBufferBytes }));
}

/**
 * Hands sonic-boom (pino's writer) one string per event-loop turn instead of one per line. sonic-boom appends
 * each line to the string already waiting and measures it with Buffer.byteLength, which flattens it: handed
 * lines one by one, every line copies everything still waiting while a write is in flight,
 * measured at a quarter of all the bytes a POST allocates at 256 connections. Joined here, the copy happens
 * once per batch.
 */
export class LineBatcher implements DestinationStream {
  private lines: string[] = [];
  private chars = 0;
  private scheduled = false;
  private readonly sink: Sink;
  // One closure for every hand-over, not one per turn.
  private readonly passLater = () => this.pass();

  constructor(makeSink: () => Sink) {
    this.sink = makeSink();
    const ref = new WeakRef(this);
    liveBatchers.add(ref);
    forgetBatcher.register(this, ref);
  }

  write(line: string): void {
    this.lines.push(line);
    this.chars += line.length;
    if (this.chars >= PASS_CHARS) this.pass();
    else if (!this.scheduled) {
      this.scheduled = true;
      // At the end of this event-loop turn, not of this tick: a loaded server answers several connections per
      // turn, each in its own tick, and a hand-over per tick costs a GET ~3% of its CPU time (measured).
      setImmediate(this.passLater);
    }
  }

  /** The lines waiting here as one string ('' when none), and none waiting after. */
  private take(): string {
    const batch = this.lines.length === 1 ? this.lines[0]! : this.lines.join('');
    this.lines = [];
    this.chars = 0;
    return batch;
  }

  private pass(): void {
    this.scheduled = false;
    const batch = this.take();
    if (batch) this.sink.write(batch);
  }

  /** Writes out what waits here and in the sink, synchronously (at exit). */
  flushSync(): void {
    const batch = this.take();
    try {
      if (batch) this.sink.write(batch);
      this.sink.flushSync();
    } catch {
      // The sink already closed (pino's own exit hook ran first): write what was ours directly.
      if (batch) writeSync(1, batch);
    }
  }
}

type Sink = Pick<ReturnType<typeof pino.destination>, 'write' | 'flushSync'>;

// A process.exit() before the turn's hand-over would otherwise drop the lines still waiting here. Installed when this module
// loads, so it runs before the exit hook pino installs with its first destination.
const liveBatchers = new Set<WeakRef<LineBatcher>>();
const forgetBatcher = new FinalizationRegistry<WeakRef<LineBatcher>>((ref) => liveBatchers.delete(ref));
process.on('exit', () => {
  for (const ref of liveBatchers) ref.deref()?.flushSync();
});

const LEVEL_NAMES: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const LEVEL_COLOURS: Record<number, string> = { 10: '90', 20: '36', 30: '32', 40: '33', 50: '31', 60: '35' };
// Fields every line has, or that the line's text already says.
const QUIET_FIELDS = new Set(['level', 'time', 'msg', 'service', 'err']);

/**
 * One JSON log line as a line a person reads: time, level, message, then the other fields as key=value (long
 * values cut short), and an error's stack below. The JSON line stays the format for files and collectors.
 */
export function prettyLine(json: string, colour: boolean): string {
  let fields: Record<string, unknown>;
  try {
    fields = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json.endsWith('\n') ? json : `${json}\n`;
  }
  const level = Number(fields.level);
  const time = typeof fields.time === 'number' ? new Date(fields.time).toISOString().slice(11, 23) : '';
  const name = (LEVEL_NAMES[level] ?? String(fields.level)).padEnd(5);
  const shownLevel = colour ? `\u001b[${LEVEL_COLOURS[level] ?? '0'}m${name}\u001b[0m` : name;
  const extra = Object.entries(fields)
    .filter(([key]) => !QUIET_FIELDS.has(key))
    .map(([key, value]) => {
      const text = typeof value === 'string' ? value : JSON.stringify(value);
      return `${key}=${text.length > 160 ? `${text.slice(0, 159)}…` : text}`;
    });
  let line = `${time} ${shownLevel} ${String(fields.msg ?? '')}${extra.length > 0 ? `  ${extra.join(' ')}` : ''}\n`;
  const err = fields.err as { message?: string; stack?: string } | undefined;
  if (err && typeof err === 'object') line += `    ${(err.stack ?? err.message ?? '').split('\n').join('\n    ')}\n`;
  return line;
}

/** Readable lines on a terminal, written at once: nobody pipes a terminal's output into a collector. */
function terminalDestination(): DestinationStream {
  const colour = !process.env.NO_COLOR;
  return {
    write(line: string) {
      writeSync(1, prettyLine(line, colour));
    },
  };
}

/** JSON lines, as pino users expect, unless standard output is a terminal (someone is watching it). */
function defaultDestination(): DestinationStream {
  return process.stdout.isTTY ? terminalDestination() : stdoutDestination();
}

/** The levels LOG_LEVEL takes (config.ts). */
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export function createLogger(config: { logLevel: LogLevel }, destination: DestinationStream = defaultDestination()): Logger {
  return pino(
    {
      level: config.logLevel,
      base: { service: 'plant-store' },
      formatters: { log: censorAuthorization },
      // With tracing on, a line written inside a span names its trace and span.
      ...(tracing.on ? { mixin: () => tracing.logFields() } : {}),
    },
    destination,
  );
}

/** Writes one request's access line: `statusCode` and `ms` are finite numbers, `code` is absent on success. */
export type AccessLog = (reqId: string, method: string, path: string, statusCode: number, code: string | undefined, ms: number) => void;

const INFO = 30;
const { lsCacheSym, timeSym, chindingsSym, endSym, streamSym, mixinSym } = pino.symbols;

/**
 * The access line of every request: the very line `logger.info({ reqId, method, path, statusCode, code, ms },
 * 'request completed')` writes, put together in one template rather than by pino's walk over a fields object
 * (a formatter call, a type switch and a stringifier per field), which cost a GET by id about 4% of its CPU.
 * The fields are strings JSON.stringify escapes as pino does (a request id, a method and a path that Node read
 * as latin1, never a lone surrogate) and two numbers. Where pino would add to the line (a mixin: tracing's
 * trace and span ids) or its destination wants each line's metadata (pino.multistream), pino writes it.
 */
export function accessLog(logger: Logger): AccessLog {
  const internals = logger as unknown as Record<symbol, unknown>;
  const stream = internals[streamSym] as DestinationStream & Record<symbol, unknown>;
  if (internals[mixinSym] || stream[Symbol.for('pino.metadata')] === true || (logger as unknown as { [k: symbol]: { streamWrite?: unknown } })[Symbol.for('pino.hooks')]?.streamWrite) {
    return (reqId, method, path, statusCode, code, ms) => logger.info({ reqId, method, path, statusCode, code, ms }, 'request completed');
  }
  const time = internals[timeSym] as () => string;
  return (reqId, method, path, statusCode, code, ms) => {
    if (logger.levelVal > INFO) return;
    const head = (internals[lsCacheSym] as Record<number, string>)[INFO]! + time() + (internals[chindingsSym] as string);
    const coded = code === undefined ? '' : `,"code":${JSON.stringify(code)}`;
    stream.write(`${head},"reqId":${JSON.stringify(reqId)},"method":${JSON.stringify(method)},"path":${JSON.stringify(path)},"statusCode":${statusCode}${coded},"ms":${ms},"msg":"request completed"${internals[endSym] as string}`);
  };
}

const LEVELS: readonly Level[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'];

/**
 * A request's logger (Fastify's childLoggerFactory), made into a pino child only when something logs through
 * it: the access line is written by the root logger with the request id as a field, so a request that logs
 * nothing else never pays for a child, whose bindings are serialized when it is made (measured).
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
