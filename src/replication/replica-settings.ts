// The settings replication adds (config.ts joins them): the replicas of REPLICA_URL and how often Litestream
// syncs them, and what of the environment Litestream is given.
import type { SettingRows } from '../kit/settings.js';
import { parseReplicaUrls, type Replica } from './replica-urls.js';

export interface ReplicaSettings {
  /** Litestream replicas of the SQLite store (empty: no replication). */
  readonly replicaUrls: readonly Replica[];
  /** How often Litestream sends new WAL frames to each replica: what a lost disk can cost at most. */
  readonly replicaSyncIntervalMs: number;
  /**
   * Not a setting: what Litestream is given of this environment (finding programs, TLS and proxies, its object
   * stores' credentials, AWS_* and LITESTREAM_*), and nothing of plant-store's own.
   */
  readonly litestreamEnv: Readonly<Record<string, string>>;
}

/** A duration of Litestream's sync interval: 500ms, 1s, 10s, 1m. */
function shortDuration(min: number, max: number) {
  return (raw: string): number => {
    const m = /^(\d{1,7})(ms|s|m)$/.exec(raw.trim());
    if (!m) throw new Error(`expected a number and a unit (ms, s or m), such as 1s or 500ms, got "${raw}"`);
    const ms = Number(m[1]) * (m[2] === 'ms' ? 1 : m[2] === 's' ? 1_000 : 60_000);
    if (ms < min || ms > max) throw new Error(`expected between ${min}ms and ${max / 60_000}m, got "${raw}"`);
    return ms;
  };
}

export const REPLICA_SETTINGS: SettingRows<ReplicaSettings> = [
  { key: 'replicaUrls', env: 'REPLICA_URL', description: 'Comma-separated Litestream replica URLs (file:///PATH, s3://BUCKET/PATH?endpoint=URL&region=R&force-path-style=true, sftp://USER[:PASSWORD]@HOST[:PORT]/PATH?key-path=FILE) that serve replicates the SQLite store to continuously; S3 credentials come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; passwords are masked wherever the URL is printed. SQLite only: on PostgreSQL run a standby (docs/deployment.md). Empty: no replication (docs/backup.md)', default: [], secret: true, parse: parseReplicaUrls, show: (replicas) => replicas.map((r) => r.shown).join(',') },
  { key: 'replicaSyncIntervalMs', env: 'REPLICA_SYNC_INTERVAL', description: 'How often new commits are sent to each replica (500ms, 1s, 10s): the most a lost disk can cost, besides the time to send them', default: 1_000, parse: shortDuration(100, 3_600_000), show: (ms) => (ms % 1_000 === 0 ? `${ms / 1_000}s` : `${ms}ms`) },
];

const LITESTREAM_ENV = /^(PATH|HOME|TZ|LANG|LC_[A-Z]+|TMPDIR|SSL_CERT_(FILE|DIR)|HTTPS?_PROXY|NO_PROXY|https?_proxy|no_proxy|AWS_[A-Z0-9_]+|LITESTREAM_[A-Z0-9_]+)$/;

/** Config.litestreamEnv: the variables of `env` (the environment config.ts read) that Litestream is given. */
export function litestreamEnvOf(env: Record<string, string | undefined>): Readonly<Record<string, string>> {
  return Object.freeze(Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined && LITESTREAM_ENV.test(e[0]))));
}
