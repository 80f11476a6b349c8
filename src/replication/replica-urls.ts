// REPLICA_URL read once (by the settings): each Litestream replica it names, with the name serve, the metrics and
// the CLI all call it by. What running Litestream needs is in litestream.ts, loaded only where it runs.

export type ReplicaType = 'file' | 's3' | 'sftp';

export interface Replica {
  /** Litestream's name of the replica: its type, numbered from the second of a type on (file, file-2). */
  readonly name: string;
  readonly type: ReplicaType;
  /** The URL as given, its password masked: for logs, metrics labels and messages. */
  readonly shown: string;
  /** The replica's entry in Litestream's configuration (no secret: a password is named by `passwordEnv`). */
  readonly config: Readonly<Record<string, string | boolean>>;
  /** An SFTP password, passed to Litestream in this environment variable, never written to its file. */
  readonly password?: { env: string; value: string };
}

/** A REPLICA_URL entry that Litestream cannot use; the message says why. */
export class ReplicaUrlError extends Error {
  override name = 'ReplicaUrlError';
}

// Query parameters each kind takes: they set the Litestream setting of the same name.
const S3_OPTIONS = ['endpoint', 'region', 'force-path-style', 'skip-verify'] as const;
const SFTP_OPTIONS = ['key-path'] as const;
const BOOLEAN_OPTIONS = new Set(['force-path-style', 'skip-verify']);

/** The URL with its password replaced by ****. */
export function maskReplicaUrl(raw: string): string {
  return raw.replace(/^([a-z0-9]+:\/\/[^:@/]*):([^@/]*)@/i, '$1:****@');
}

/** The comma-separated REPLICA_URL as replicas; throws ReplicaUrlError naming the first bad entry. */
export function parseReplicaUrls(raw: string): readonly Replica[] {
  const entries = raw.split(',').map((e) => e.trim()).filter(Boolean);
  if (entries.length > 8) throw new ReplicaUrlError(`at most 8 replicas, got ${entries.length}`);
  const seen = new Map<string, number>();
  return Object.freeze(
    entries.map((entry, i) => {
      const replica = parseOne(entry, i);
      const n = (seen.get(replica.type) ?? 0) + 1;
      seen.set(replica.type, n);
      const name = n === 1 ? replica.type : `${replica.type}-${n}`;
      return Object.freeze({ ...replica, name, config: Object.freeze({ name, ...replica.config }) });
    }),
  );
}

function parseOne(entry: string, index: number): Omit<Replica, 'name'> {
  const shown = maskReplicaUrl(entry);
  let url: URL;
  try {
    url = new URL(entry);
  } catch {
    throw new ReplicaUrlError(`"${shown}" is not a URL: use file:///PATH, s3://BUCKET/PATH or sftp://USER@HOST/PATH`);
  }
  const options = (allowed: readonly string[]): Record<string, string | boolean> => {
    const out: Record<string, string | boolean> = {};
    for (const [key, value] of url.searchParams) {
      if (!allowed.includes(key)) {
        throw new ReplicaUrlError(`"${shown}": unknown option ${key} (${url.protocol.slice(0, -1)} replicas take ${allowed.join(', ') || 'none'})`);
      }
      if (BOOLEAN_OPTIONS.has(key)) {
        if (value !== 'true' && value !== 'false') throw new ReplicaUrlError(`"${shown}": ${key} must be true or false`);
        out[key] = value === 'true';
      } else out[key] = value;
    }
    return out;
  };
  const path = decodeURIComponent(url.pathname);
  switch (url.protocol) {
    case 'file:': {
      if (url.host !== '' || !path.startsWith('/') || path === '/') throw new ReplicaUrlError(`"${shown}": a file replica is a folder given by its absolute path, file:///srv/replica`);
      options([]);
      return { type: 'file', shown, config: { type: 'file', path } };
    }
    case 's3:': {
      if (url.username || url.password) {
        throw new ReplicaUrlError(`"${shown}": no credentials in the URL; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or LITESTREAM_ACCESS_KEY_ID and LITESTREAM_SECRET_ACCESS_KEY)`);
      }
      if (!url.hostname) throw new ReplicaUrlError(`"${shown}": name the bucket, s3://BUCKET/PATH`);
      const key = path.replace(/^\/+|\/+$/g, '');
      return { type: 's3', shown, config: { type: 's3', bucket: url.hostname, path: key, ...options(S3_OPTIONS) } };
    }
    case 'sftp:': {
      if (!url.hostname || !url.username) throw new ReplicaUrlError(`"${shown}": name the user and host, sftp://USER@HOST[:PORT]/PATH`);
      if (path === '' || path === '/') throw new ReplicaUrlError(`"${shown}": name the folder on the server, sftp://USER@HOST/PATH`);
      const extra = options(SFTP_OPTIONS);
      if (!url.password && extra['key-path'] === undefined) throw new ReplicaUrlError(`"${shown}": give a key (?key-path=/path/to/key) or a password`);
      const config: Record<string, string | boolean> = {
        type: 'sftp',
        host: `${url.hostname}:${url.port || '22'}`,
        user: decodeURIComponent(url.username),
        path,
        ...extra,
      };
      if (!url.password) return { type: 'sftp', shown, config };
      // Litestream expands ${VAR} in its configuration: the file names the variable, the process gets the value.
      const env = `PLANT_STORE_REPLICA_PASSWORD_${index + 1}`;
      return { type: 'sftp', shown, config: { ...config, password: `\${${env}}` }, password: { env, value: decodeURIComponent(url.password) } };
    }
    default:
      throw new ReplicaUrlError(`"${shown}": unsupported scheme ${url.protocol} (use file:, s3: or sftp:)`);
  }
}

