// The only reader of process.env: every setting is parsed, checked and defaulted here, then frozen.
import ipaddr from 'ipaddr.js';

export interface Config {
  readonly port: number;
  readonly host: string;
  readonly databaseUrl: string;
  readonly logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Largest accepted request body, in bytes. */
  readonly bodyLimit: number;
  /** Whole-request deadline (headers and body) against slow clients. */
  readonly requestTimeoutMs: number;
  /** Deadline for receiving the request headers. */
  readonly headersTimeoutMs: number;
  readonly keepAliveTimeoutMs: number;
  /** How long SIGTERM waits for in-flight requests before closing anyway. */
  readonly shutdownTimeoutMs: number;
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
  /** Creates waiting for their commit above which new creates are shed with 503; 0 turns the check off. */
  readonly shedPendingCreates: number;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Env = Record<string, string | undefined>;

interface Setting<K extends keyof Config> {
  key: K;
  env: string;
  description: string;
  default: Config[K];
  parse: (raw: string) => Config[K];
  secret?: boolean;
}

function integer(min: number, max: number) {
  return (raw: string): number => {
    if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`expected a whole number, got "${raw}"`);
    const n = Number(raw.trim());
    if (n < min || n > max) throw new ConfigError(`expected a number from ${min} to ${max}, got ${n}`);
    return n;
  };
}

function boolean(raw: string): boolean {
  const v = raw.trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(v)) return true;
  if (['0', 'false', 'no', 'off'].includes(v)) return false;
  throw new ConfigError(`expected true or false, got "${raw}"`);
}

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

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** Every setting, in the order `plant-store config` prints them. The README's table mirrors this list. */
export const SETTINGS: ReadonlyArray<Setting<keyof Config>> = [
  { key: 'port', env: 'PORT', description: 'TCP port to listen on (0 picks a free one)', default: 8080, parse: integer(0, 65535) },
  { key: 'host', env: 'HOST', description: 'Address to listen on', default: '127.0.0.1', parse: (raw) => {
    if (!/^[\w.:[\]-]+$/.test(raw)) throw new ConfigError(`not a host name or address: "${raw}"`);
    return raw;
  } },
  { key: 'databaseUrl', env: 'DATABASE_URL', description: 'Store location: sqlite:PATH (PATH relative to the working directory)', default: 'sqlite:./data/plant-store.db', secret: true, parse: (raw) => {
    if (!/^sqlite:.+/.test(raw)) throw new ConfigError(`unsupported DATABASE_URL "${maskUrl(raw)}": use sqlite:PATH`);
    return raw;
  } },
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
  { key: 'tokenCacheTtlMs', env: 'TOKEN_CACHE_TTL_MS', description: 'How long a verified token is trusted before the store is asked again (bounds revocation delay)', default: 2_000, parse: integer(0, 4_000) },
  { key: 'authFailuresPerMinute', env: 'AUTH_FAILURES_PER_MINUTE', description: 'Failed authentications per client address per minute before 429', default: 30, parse: integer(1, 1_000_000) },
  { key: 'bootstrapToken', env: 'BOOTSTRAP_TOKEN', description: 'On a store with no tokens, create one and print it once at start', default: true, parse: boolean },
  { key: 'webhookTimeoutMs', env: 'WEBHOOK_TIMEOUT_MS', description: 'Deadline of one webhook delivery attempt; a timeout is retried', default: 15_000, parse: integer(100, 600_000) },
  { key: 'webhookAllowedHosts', env: 'WEBHOOK_ALLOWED_HOSTS', description: 'Comma-separated hosts (names or IP literals) webhook URLs may use even when they resolve to private or loopback addresses', default: [], parse: hostList },
  { key: 'webhookConcurrency', env: 'WEBHOOK_CONCURRENCY', description: 'Webhook sends in flight at most (each subscription gets at most 4 of them)', default: 32, parse: integer(1, 1_024) },
  { key: 'corsOrigins', env: 'CORS_ORIGINS', description: 'Comma-separated browser origins (e.g. https://app.example) allowed to call the API cross-origin; empty turns CORS off', default: [], parse: originList },
  { key: 'rateLimit', env: 'RATE_LIMIT', description: 'Limit each token to RATE_LIMIT_PER_TOKEN requests per RATE_LIMIT_WINDOW_S (per instance); off turns the per-token limit off', default: true, parse: boolean },
  { key: 'rateLimitPerToken', env: 'RATE_LIMIT_PER_TOKEN', description: 'Requests one token may make per window before 429', default: 60_000, parse: integer(1, 100_000_000) },
  { key: 'rateLimitWindowS', env: 'RATE_LIMIT_WINDOW_S', description: 'Length of the rate-limit window in seconds', default: 60, parse: integer(1, 86_400) },
  { key: 'trustProxy', env: 'TRUST_PROXY', description: 'Comma-separated proxy addresses or CIDRs whose X-Forwarded-For gives the client address (for per-address limits and logs); empty trusts none', default: [], parse: proxyList },
  { key: 'shedEventLoopDelayMs', env: 'SHED_EVENT_LOOP_DELAY_MS', description: 'Event-loop delay (ms) above which API requests get 503 with Retry-After; 0 turns it off', default: 1_000, parse: integer(0, 600_000) },
  { key: 'shedPendingCreates', env: 'SHED_PENDING_CREATES', description: 'Creates waiting for their commit above which new creates get 503 with Retry-After; 0 turns it off', default: 10_000, parse: integer(0, 10_000_000) },
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
  if (problems.length > 0) throw new ConfigError(`invalid configuration:\n  ${problems.join('\n  ')}`);
  return Object.freeze({ ...(out as unknown as Config), ...overrides });
}

function maskUrl(url: string): string {
  return url.replace(/\/\/([^:@/]*):([^@/]*)@/, '//$1:****@');
}

/** The effective configuration as printable lines, secrets masked. */
export function describeConfig(config: Config): string[] {
  return SETTINGS.map((s) => {
    const value = config[s.key];
    const shown = s.secret ? maskUrl(String(value)) : String(value);
    return `${s.env}=${shown}`;
  });
}
