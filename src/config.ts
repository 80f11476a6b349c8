// The only reader of process.env: every setting is parsed, checked and defaulted here, then frozen. The rows of
// an engine's settings (storage/engines.ts), replication's and the JWTs' are declared by their parts and joined here.
import { JWT_SETTINGS, jwtProblems, type JwtSettings } from './auth/jwt-settings.js';
import ipaddr from 'ipaddr.js';
import { parseSecretKeys, type SecretKey } from './webhooks/secret-box.js';
import { DEFAULT_DATABASE_URL, ENGINE_SETTINGS, engineFor, engines, type EnginesSettings } from './storage/engines.js';
import type { StoreOptions } from './storage/open-store.js';
import { litestreamEnvOf, REPLICA_SETTINGS, type ReplicaSettings } from './replication/replica-settings.js';
import { boolean, integer, type SettingRows } from './kit/settings.js';
import { OTEL_SAMPLERS, type TracingSettings } from './tracing/spans.js';
import type { LogLevel } from './observations/logger.js';

export interface Config extends TracingSettings, EnginesSettings, ReplicaSettings, JwtSettings {
  readonly port: number;
  readonly host: string;
  /** HTTP worker processes of `serve`; 0: one per available core. */
  readonly workers: number;
  readonly databaseUrl: string;
  readonly logLevel: LogLevel;
  /** Largest accepted request body, in bytes. */
  readonly bodyLimit: number;
  /** Whole-request deadline (headers and body) against slow clients. */
  readonly requestTimeoutMs: number;
  /** Deadline for receiving the request headers. */
  readonly headersTimeoutMs: number;
  readonly keepAliveTimeoutMs: number;
  /** How long SIGTERM waits for in-flight requests before closing anyway. */
  readonly shutdownTimeoutMs: number;
  /** Where serve writes its process id once it serves (systemd's PIDFile=, which follows a reload); empty: nowhere. */
  readonly pidFile: string;
  /** Owner-only folder of the takeover control socket; empty: one under the temporary folder. */
  readonly runtimeDirectory: string;
  /** How long a verified token may be trusted without asking the store again (revocations take this long). */
  readonly tokenCacheTtlMs: number;
  /** Failed authentications allowed per client address per minute before 429. */
  readonly authFailuresPerMinute: number;
  /** Create and print a first token when the store has none. */
  readonly bootstrapToken: boolean;
  /** Deadline of one webhook delivery attempt (connect, send, answer). */
  readonly webhookTimeoutMs: number;
  /** Hosts (names or IP literals, lower case) exempt from the webhook SSRF address check. */
  readonly webhookAllowedHosts: readonly string[];
  /** Keys that encrypt webhook signing secrets at rest; the first encrypts, the others only decrypt. Empty: stored in clear. */
  readonly webhookSecretKeys: readonly SecretKey[];
  /** Webhook sends in flight at most, over all subscriptions. */
  readonly webhookConcurrency: number;
  /** Browser origins (scheme://host[:port]) allowed to call the API cross-origin; empty turns CORS off. */
  readonly corsOrigins: readonly string[];
  /** Whether each token is limited to rateLimitPerToken requests per rateLimitWindowS (per instance). */
  readonly rateLimit: boolean;
  readonly rateLimitPerToken: number;
  readonly rateLimitWindowS: number;
  /** Proxies (addresses or CIDRs) whose X-Forwarded-For is believed for the client address; empty trusts none. */
  readonly trustProxy: readonly string[];
  /** Event-loop delay above which API requests are shed with 503; 0 turns the check off. */
  readonly shedEventLoopDelayMs: number;
  /** Plant writes waiting for their commit above which new ones are shed with 503; 0 turns the check off. */
  readonly shedPendingCreates: number;
  /** MB V8's old generation may grow past what it last held at least before the process collects it; 0 leaves it to V8. */
  readonly heapHeadroomMb: number;
  /** Updates and deletes of plants without If-Match are refused with 428. */
  readonly requireIfMatch: boolean;
  /** The console at /console (off: no such route). */
  readonly console: boolean;
  /** Webhook subscriptions the store may hold in all. */
  readonly webhookMaxSubscriptions: number;
  /** How long events stay in the feed (and finished deliveries in the history). */
  readonly eventRetentionMs: number;
  /** Counted lists (Prefer: count=exact) waiting for this process's count lane at most (503 past it). */
  readonly countsMaxWaiting: number;
  /** Counted lists one token may have waiting for the count lane (429 past it). */
  readonly countsMaxWaitingPerToken: number;
  /** GET /events requests waiting for an event at most at once (in this process). */
  readonly eventsMaxWaiting: number;
  /** The same for one token or JWT subject. */
  readonly eventsMaxWaitingPerToken: number;
  /** Bytes of JSON a GET /events page holds at most (beyond its first event); then it ends with Link to the rest. */
  readonly eventsPageBytes: number;
  /** Seconds between keep-alive comments on an idle event stream. */
  readonly eventsHeartbeatSeconds: number;
  /** Event streams open at most at once in this process. */
  readonly eventsMaxStreams: number;
  /** Event streams one token or JWT subject may have open at once in this process. */
  readonly eventsMaxStreamsPerToken: number;
  /** Seconds an event stream's socket may stay full before the stream is cut off. */
  readonly eventsStreamStallSeconds: number;
  /** How long a stream ticket (POST /events/tickets) lives. */
  readonly eventsTicketSeconds: number;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Env = Record<string, string | undefined>;

/** A comma-separated list of host names or IP literals (IPv6 with or without brackets), lower-cased. */
function hostList(raw: string): readonly string[] {
  const hosts = raw.split(',').map((h) => h.trim().toLowerCase()).filter(Boolean);
  for (const h of hosts) {
    if (!/^(\[[0-9a-f:.]+\]|[0-9a-f:.]*:[0-9a-f:.]*|[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*\.?)$/.test(h)) {
      throw new ConfigError(`expected comma-separated host names or IP addresses, got "${h}"`);
    }
  }
  return Object.freeze(hosts);
}

/** A comma-separated list of exact origins such as https://app.example (no path, no wildcard). */
function originList(raw: string): readonly string[] {
  const origins = raw.split(',').map((o) => o.trim()).filter(Boolean);
  for (const o of origins) {
    let origin: string | undefined;
    try {
      const url = new URL(o);
      if (url.protocol === 'http:' || url.protocol === 'https:') origin = url.origin;
    } catch {
      // reported below
    }
    if (origin !== o) throw new ConfigError(`expected comma-separated origins like https://app.example, got "${o}"`);
  }
  return Object.freeze(origins);
}

function isAddressOrRange(entry: string): boolean {
  const [address = '', bits, ...rest] = entry.split('/');
  const v4 = ipaddr.IPv4.isValidFourPartDecimal(address);
  if (rest.length > 0 || (!v4 && !ipaddr.IPv6.isValid(address))) return false;
  return bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= (v4 ? 32 : 128));
}

/** A comma-separated list of IP addresses or CIDR ranges (the proxies in front of the service). */
function proxyList(raw: string): readonly string[] {
  const entries = raw.split(',').map((e) => e.trim().toLowerCase()).filter(Boolean);
  for (const e of entries) {
    if (!isAddressOrRange(e)) throw new ConfigError(`expected comma-separated IP addresses or CIDR ranges (e.g. 10.0.0.0/8), got "${e}"`);
  }
  return Object.freeze(entries);
}

const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** A duration such as `90s`, `30m`, `36h` or `7d`, in milliseconds, between `min` and `max`. */
function duration(min: number, max: number) {
  return (raw: string): number => {
    const m = /^(\d{1,7})(s|m|h|d)$/.exec(raw.trim());
    if (!m) throw new ConfigError(`expected a number and a unit (s, m, h or d), such as 7d or 36h, got "${raw}"`);
    const ms = Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
    if (ms < min || ms > max) throw new ConfigError(`expected between ${min / 60_000}m and ${max / 86_400_000}d, got "${raw}"`);
    return ms;
  };
}

/** Milliseconds as the largest whole unit that `duration` reads back. */
function durationText(ms: number): string {
  for (const unit of ['d', 'h', 'm'] as const) if (ms % UNIT_MS[unit] === 0) return `${ms / UNIT_MS[unit]}${unit}`;
  return `${Math.round(ms / 1_000)}s`;
}

/** An http(s) URL of an OTLP collector. */
function otlpUrl(raw: string): string {
  let url: URL | undefined;
  try {
    url = new URL(raw.trim());
  } catch {
    // reported below
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) throw new ConfigError(`expected an http:// or https:// URL, got "${raw}"`);
  return raw.trim();
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/**
 * Every setting, in the order `plant-store config` prints them. docs/configuration.md's table and .env.example are
 * written from this list (`npm run docs:config`) and test/ops/config-reference.test.ts fails when they differ.
 */
export const SETTINGS: SettingRows<Config> = [
  { key: 'port', env: 'PORT', description: 'TCP port to listen on (0 picks a free one)', default: 8080, parse: integer(0, 65535) },
  { key: 'host', env: 'HOST', description: 'Address to listen on (0.0.0.0 for every interface)', default: '127.0.0.1', parse: (raw) => {
    if (!/^[\w.:[\]-]+$/.test(raw)) throw new ConfigError(`not a host name or address: "${raw}"`);
    return raw;
  } },
  { key: 'workers', env: 'WORKERS', description: 'Processes that serve HTTP, sharing the port: a number, or auto for one per available core. 1 serves from one process; with more, one primary process commits every write (SQLite) and runs the webhook deliveries, and replaces a worker that dies. An in-memory database always runs in one process', default: 0, parse: (raw) => (raw.trim().toLowerCase() === 'auto' ? 0 : integer(1, 1_024)(raw)), show: (v) => (v === 0 ? 'auto' : String(v)) },
  { key: 'databaseUrl', env: 'DATABASE_URL', description: `Store location: ${engines.map((e) => `${e.urlForm} (${e.urlNotes})`).join(' or ')}; the password is masked wherever the URL is printed`, default: DEFAULT_DATABASE_URL, secret: true, parse: (raw) => {
    const engine = engineFor(raw);
    if (!engine) throw new ConfigError(`unsupported DATABASE_URL "${maskUrl(raw)}": use ${engines.map((e) => e.urlForm).join(' or ')}`);
    const problem = engine.urlProblem?.(raw);
    if (problem !== undefined) throw new ConfigError(`DATABASE_URL "${maskUrl(raw)}" ${problem}`);
    return raw;
  } },
  ...ENGINE_SETTINGS,
  { key: 'logLevel', env: 'LOG_LEVEL', description: 'fatal, error, warn, info, debug, trace or silent', default: 'info', parse: (raw) => {
    const v = raw.trim().toLowerCase();
    if (!(LOG_LEVELS as readonly string[]).includes(v)) throw new ConfigError(`expected one of ${LOG_LEVELS.join(', ')}, got "${raw}"`);
    return v as Config['logLevel'];
  } },
  { key: 'bodyLimit', env: 'BODY_LIMIT_BYTES', description: 'Largest request body in bytes; larger ones get 413', default: 1_048_576, parse: integer(64, 1_073_741_824) },
  { key: 'requestTimeoutMs', env: 'REQUEST_TIMEOUT_MS', description: 'Deadline to receive a whole request', default: 30_000, parse: integer(1_000, 3_600_000) },
  { key: 'headersTimeoutMs', env: 'HEADERS_TIMEOUT_MS', description: 'Deadline to receive request headers', default: 10_000, parse: integer(1_000, 3_600_000) },
  { key: 'keepAliveTimeoutMs', env: 'KEEP_ALIVE_TIMEOUT_MS', description: 'Idle keep-alive connections close after this', default: 5_000, parse: integer(100, 3_600_000) },
  { key: 'shutdownTimeoutMs', env: 'SHUTDOWN_TIMEOUT_MS', description: 'Grace period for in-flight requests on SIGTERM/SIGINT', default: 10_000, parse: integer(0, 600_000) },
  { key: 'pidFile', env: 'PID_FILE', description: "File serve writes its process id to once it serves, and removes when it stops; a server that takes over (a reload, SIGHUP) writes its own before the old one stops, so systemd's PIDFile= follows it (docs/deployment.md). Empty: none", default: '', parse: (raw) => raw.trim() },
  { key: 'runtimeDirectory', env: 'RUNTIME_DIRECTORY', description: "Owner-only folder where serve keeps the socket a new server finds it by to take over (docs/operations.md); systemd's RuntimeDirectory= sets it. Empty: plant-store-UID under the temporary folder", default: '', parse: (raw) => raw.split(':')[0]!.trim() },
  { key: 'tokenCacheTtlMs', env: 'TOKEN_CACHE_TTL_MS', description: 'How long a verified token is trusted before the store is asked again (at most 4000, so a revocation applies everywhere within 5 s)', default: 2_000, parse: integer(0, 4_000) },
  { key: 'authFailuresPerMinute', env: 'AUTH_FAILURES_PER_MINUTE', description: 'Failed authentications per client address per minute before 429', default: 30, parse: integer(1, 1_000_000) },
  { key: 'bootstrapToken', env: 'BOOTSTRAP_TOKEN', description: 'On a store with no tokens, create one and print it once at start', default: true, parse: boolean },
  { key: 'webhookTimeoutMs', env: 'WEBHOOK_TIMEOUT_MS', description: 'Deadline of one webhook delivery attempt; a timeout is retried', default: 15_000, parse: integer(100, 600_000) },
  { key: 'webhookAllowedHosts', env: 'WEBHOOK_ALLOWED_HOSTS', description: 'Comma-separated hosts (names or IP literals, exact and case-insensitive) webhook URLs may use even when they resolve to private or loopback addresses, e.g. 127.0.0.1 for a receiver on the same machine', default: [], parse: hostList },
  { key: 'webhookSecretKeys', env: 'WEBHOOK_SECRET_KEYS', description: 'Comma-separated AES-256-GCM keys, each 32 random bytes in base64 (openssl rand -base64 32), that encrypt webhook signing secrets at rest: the first encrypts, the others only decrypt; serve (at start-up) and plant-store secrets rotate encrypt every secret again under the first, other commands only read (rotation: add the new key last everywhere, then first, then drop the old one: docs/operations.md). Empty: secrets are stored in clear, with a warning at start-up', default: [], secret: true, parse: (raw) => {
    try {
      return parseSecretKeys(raw);
    } catch (err) {
      throw new ConfigError((err as Error).message);
    }
  }, show: (keys) => (keys as readonly SecretKey[]).map((k) => `key:${k.id}`).join(',') },
  { key: 'webhookConcurrency', env: 'WEBHOOK_CONCURRENCY', description: 'Webhook sends in flight at most (each subscription gets at most 4 of them)', default: 32, parse: integer(1, 1_024) },
  { key: 'corsOrigins', env: 'CORS_ORIGINS', description: 'Comma-separated browser origins (e.g. https://app.example) allowed to call the API cross-origin; empty turns CORS off', default: [], parse: originList },
  ...JWT_SETTINGS,
  { key: 'rateLimit', env: 'RATE_LIMIT', description: 'Limit each token to RATE_LIMIT_PER_TOKEN requests per RATE_LIMIT_WINDOW_S (per instance); off turns the per-token limit off', default: true, parse: boolean },
  { key: 'rateLimitPerToken', env: 'RATE_LIMIT_PER_TOKEN', description: 'Requests one token may make per window before 429', default: 60_000, parse: integer(1, 100_000_000) },
  { key: 'rateLimitWindowS', env: 'RATE_LIMIT_WINDOW_S', description: 'Length of the rate-limit window in seconds', default: 60, parse: integer(1, 86_400) },
  { key: 'trustProxy', env: 'TRUST_PROXY', description: 'Comma-separated proxy addresses or CIDRs whose X-Forwarded-For gives the client address (for per-address limits and logs); empty trusts none. Never list addresses clients connect from directly', default: [], parse: proxyList },
  { key: 'shedEventLoopDelayMs', env: 'SHED_EVENT_LOOP_DELAY_MS', description: 'Event-loop delay (ms) above which API requests get 503 with Retry-After; 0 turns it off', default: 1_000, parse: integer(0, 600_000) },
  { key: 'shedPendingCreates', env: 'SHED_PENDING_CREATES', description: 'Plant writes (creates, updates, deletes) waiting for their commit above which new ones get 503 with Retry-After; 0 turns it off', default: 10_000, parse: integer(0, 10_000_000) },
  { key: 'heapHeadroomMb', env: 'HEAP_HEADROOM_MB', description: "Megabytes V8's old generation may grow past the least it held since its last full collection (or as much again, if more) before the process makes one, at most one every 5 s: under many connections, what requests in flight hold is promoted and would otherwise grow it to about 4 times what is alive; 0 leaves it to V8", default: 16, parse: integer(0, 65_536) },
  { key: 'webhookMaxSubscriptions', env: 'WEBHOOK_MAX_SUBSCRIPTIONS', description: 'Webhook subscriptions the store may hold in all (every one adds a delivery to each matching write); POST /webhooks beyond it is 409', default: 100, parse: integer(1, 100_000) },
  { key: 'eventRetentionMs', env: 'EVENT_RETENTION', description: 'How long events stay in the feed (GET /events), as a number and a unit: 30m, 36h, 7d. Older events are removed in the background with their finished webhook deliveries and attempts; an event with a delivery still pending stays', default: 7 * 86_400_000, parse: duration(60_000, 3_650 * 86_400_000), show: (v) => durationText(v as number) },
  { key: 'countsMaxWaiting', env: 'COUNTS_MAX_WAITING', description: 'GET /plants with Prefer: count=exact: counts waiting at most in this process while one runs (each process counts one at a time, off its event loop); past it a counted list is answered 503 with Retry-After', default: 16, parse: integer(0, 10_000) },
  { key: 'countsMaxWaitingPerToken', env: 'COUNTS_MAX_WAITING_PER_TOKEN', description: 'GET /plants with Prefer: count=exact: counts one token (or JWT subject) may have waiting at once in this process; past it a counted list is answered 429 with Retry-After', default: 2, parse: integer(0, 10_000) },
  { key: 'eventsMaxWaiting', env: 'EVENTS_MAX_WAITING', description: 'GET /events requests waiting (wait=) for an event at most at once in this process; past it a request that would wait is answered 503 with Retry-After', default: 1_000, parse: integer(0, 100_000) },
  { key: 'eventsMaxWaitingPerToken', env: 'EVENTS_MAX_WAITING_PER_TOKEN', description: 'GET /events requests one token (or JWT subject) may have waiting at once in this process; past it a request that would wait is answered 429 with Retry-After', default: 4, parse: integer(0, 10_000) },
  { key: 'eventsPageBytes', env: 'EVENTS_PAGE_BYTES', description: 'Bytes of JSON one GET /events page holds at most: the page ends before the event that would pass it (with Link to the rest), and always holds at least one event. Bounds the memory each feed request takes', default: 262_144, parse: integer(1_024, 67_108_864) },
  { key: 'eventsHeartbeatSeconds', env: 'EVENTS_HEARTBEAT_SECONDS', description: 'Seconds between the keep-alive comments (": keep-alive") a GET /events stream (Accept: text/event-stream) sends while it has no event to send, so that proxies keep the connection', default: 15, parse: integer(1, 3_600) },
  { key: 'eventsMaxStreams', env: 'EVENTS_MAX_STREAMS', description: 'GET /events streams (Accept: text/event-stream) open at most at once in this process (each of WORKERS has its own); past it a new stream is answered 503 with Retry-After. An idle stream holds about 34 KB, so the default holds about 34 MB: it fits the 256 MB budgeted a process (docs/deployment.md) beside the 209 MB measured under load', default: 1_000, parse: integer(0, 1_000_000) },
  { key: 'eventsMaxStreamsPerToken', env: 'EVENTS_MAX_STREAMS_PER_TOKEN', description: 'GET /events streams one token (or JWT subject) may have open at once in this process (each of WORKERS has its own, so an instance allows WORKERS times as many); past it a new stream is answered 429 with Retry-After', default: 16, parse: integer(0, 100_000) },
  { key: 'eventsStreamStallSeconds', env: 'EVENTS_STREAM_STALL_SECONDS', description: 'Seconds a GET /events stream may leave its socket full (its reader reads nothing) before it is cut off; the reader resumes with Last-Event-ID. Bounds what a stream holds to its socket buffer and one read', default: 30, parse: integer(1, 3_600) },
  { key: 'eventsTicketSeconds', env: 'EVENTS_TICKET_SECONDS', description: "How long a stream ticket (POST /events/tickets: what a browser's EventSource opens GET /events with, as ?ticket=) lives: its EventSource reconnects with it until then, and a stream it opened ends then (the page makes a new ticket and resumes from its last id). A ticket dies sooner with its token", default: 600, parse: integer(10, 86_400) },
  { key: 'otelTracesExporter', env: 'OTEL_TRACES_EXPORTER', description: 'otlp sends OpenTelemetry traces over OTLP/HTTP (JSON) to OTEL_EXPORTER_OTLP_ENDPOINT (default http://localhost:4318); none turns tracing off even with an endpoint; empty: on exactly when an OTLP endpoint is set. Off, no OpenTelemetry code is loaded', default: '', parse: (raw) => {
    const v = raw.trim().toLowerCase();
    if (v !== 'otlp' && v !== 'none') throw new ConfigError(`expected otlp or none (only OTLP over HTTP is built in), got "${raw}"`);
    return v;
  } },
  { key: 'otelExporterOtlpEndpoint', env: 'OTEL_EXPORTER_OTLP_ENDPOINT', description: 'Base URL of the OTLP/HTTP collector (e.g. http://otel-collector:4318); traces go to its /v1/traces. Setting it turns tracing on', default: '', parse: otlpUrl },
  { key: 'otelExporterOtlpTracesEndpoint', env: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', description: 'Full OTLP/HTTP traces URL, used as is instead of OTEL_EXPORTER_OTLP_ENDPOINT/v1/traces. Setting it turns tracing on', default: '', parse: otlpUrl },
  { key: 'otelServiceName', env: 'OTEL_SERVICE_NAME', description: 'service.name of the traces', default: 'plant-store', parse: (raw) => raw.trim() },
  { key: 'otelTracesSampler', env: 'OTEL_TRACES_SAMPLER', description: `Which traces are recorded: ${OTEL_SAMPLERS.join(', ')} (parentbased_*: a caller's sampled flag in traceparent decides)`, default: 'parentbased_always_on', parse: (raw) => {
    const v = raw.trim().toLowerCase();
    if (!(OTEL_SAMPLERS as readonly string[]).includes(v)) throw new ConfigError(`expected one of ${OTEL_SAMPLERS.join(', ')}, got "${raw}"`);
    return v as Config['otelTracesSampler'];
  } },
  { key: 'otelTracesSamplerArg', env: 'OTEL_TRACES_SAMPLER_ARG', description: 'The ratio of traces the traceidratio samplers record, from 0 to 1', default: 1, parse: (raw) => {
    const n = Number(raw.trim());
    if (!/^\d*\.?\d+$/.test(raw.trim()) || n > 1) throw new ConfigError(`expected a ratio from 0 to 1, got "${raw}"`);
    return n;
  } },
  ...REPLICA_SETTINGS,
  { key: 'requireIfMatch', env: 'REQUIRE_IF_MATCH', description: 'Refuse PUT, PATCH and DELETE of a plant without If-Match (428), so no client can overwrite a change it has not seen', default: false, parse: boolean },
  { key: 'console', env: 'CONSOLE', description: 'Serve the console, a web page to sign in with a token and work with the service, at /console; off removes the route (docs/console.md)', default: true, parse: boolean },
];

/** Reads the environment once; throws ConfigError naming every bad variable. */
export function loadConfig(env: Env = process.env, overrides: Partial<Config> = {}): Config {
  const out: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const s of SETTINGS) {
    const raw = env[s.env];
    if (raw === undefined || raw === '') {
      out[s.key] = s.default;
      continue;
    }
    try {
      out[s.key] = s.parse(raw);
    } catch (err) {
      problems.push(`${s.env}: ${(err as Error).message}`);
    }
  }
  if (problems.length === 0 && (out.headersTimeoutMs as number) > (out.requestTimeoutMs as number)) {
    problems.push('HEADERS_TIMEOUT_MS: must not exceed REQUEST_TIMEOUT_MS (the headers are part of the request)');
  }
  if (problems.length === 0) problems.push(...jwtProblems(out as unknown as Config), ...replicaProblems(out as unknown as Config));
  if (problems.length > 0) throw new ConfigError(`invalid configuration:\n  ${problems.join('\n  ')}`);
  out.litestreamEnv = litestreamEnvOf(env);
  return Object.freeze({ ...(out as unknown as Config), ...overrides });
}

/** Replication is Litestream's, which follows a SQLite file: a store with no file on this machine has none. */
function replicaProblems(c: Config): string[] {
  if (c.replicaUrls.length === 0) return [];
  const engine = engineFor(c.databaseUrl);
  if (!engine) return [];
  const local = engine.localFile(c.databaseUrl);
  if (!engine.replicates || local === undefined) {
    const instead = engine.ownTools ? `${engine.ownTools.replica} and unset REPLICA_URL` : 'unset REPLICA_URL';
    return [`REPLICA_URL: replication with Litestream is for the SQLite store; ${instead}`];
  }
  if ('inMemory' in local) return [`REPLICA_URL: an in-memory store (${c.databaseUrl}) cannot be replicated`];
  return [];
}

/** Hides the password of a URL: user:PASSWORD@ and a password= query parameter (libpq style). */
export function maskUrl(url: string): string {
  return url.replace(/\/\/([^:@/]*):([^@/]*)@/, '//$1:****@').replace(/([?&]password=)[^&]*/gi, '$1****');
}

/** The effective configuration as printable lines, secrets masked. */
export function describeConfig(config: Config): string[] {
  return SETTINGS.map((s) => {
    const value = config[s.key];
    const shown = s.show ? (s.show as (v: unknown) => string)(value) : s.secret ? maskUrl(String(value)) : String(value);
    return `${s.env}=${shown}`;
  });
}

/** A setting's default as written in an environment file ('' for an empty list or string). */
function defaultText(s: SettingRows<Config>[number]): string {
  if (s.show) return (s.show as (v: unknown) => string)(s.default);
  return Array.isArray(s.default) ? s.default.join(',') : String(s.default);
}

/** The Markdown table of every setting (docs/configuration.md): variable, default, meaning. */
export function settingsTable(): string {
  const cell = (text: string) => text.replace(/\|/g, '\\|');
  const rows = SETTINGS.map((s) => {
    const d = defaultText(s);
    return `| \`${s.env}\` | ${d === '' ? '(empty)' : `\`${cell(d)}\``} | ${cell(s.description)} |`;
  });
  return ['| Variable | Default | Meaning |', '|---|---|---|', ...rows].join('\n') + '\n';
}

/** .env.example: every setting with its default, each under its description. */
export function envExample(): string {
  const header =
    '# Every plant-store setting with its default. The service reads only its environment: load this file with\n' +
    '# `set -a; . ./.env; set +a`, systemd\'s EnvironmentFile= or `docker run --env-file`. An empty value means the default.\n' +
    '# Generated from src/config.ts by `npm run docs:config`; docs/configuration.md explains each one.\n';
  return header + SETTINGS.map((s) => `\n# ${s.description}\n${s.env}=${defaultText(s)}\n`).join('');
}

/** The store options the configuration sets (the PostgreSQL pool and its timeouts), and the secret keys. */
export function storeOptions(config: Config): StoreOptions {
  return {
    poolSize: config.databasePoolSize,
    statementTimeoutMs: config.databaseStatementTimeoutMs,
    connectTimeoutMs: config.databaseConnectTimeoutMs,
    autoCheckpoint: config.replicaUrls.length === 0,
    webhookSecretKeys: config.webhookSecretKeys,
  };
}
