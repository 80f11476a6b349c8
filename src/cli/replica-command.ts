// `plant-store replica status` and what `restore --from-replica` takes from the replicas: both ask Litestream,
// with the configuration serve gives it, so they see the replicas serve writes to, by the same names.
import { spawn } from 'node:child_process';
import type { Config } from '../config.js';
import { litestreamBinary, litestreamEnv, ownerOnlyCommand, writeLitestreamConfig } from '../replication/litestream.js';
import type { Replica } from '../replication/replica-urls.js';
import { sqliteFile } from './database.js';
import { commandArgs, UsageError } from './subcommand.js';

export const REPLICA_HELP = `Usage: plant-store replica status [--max-lag SECONDS]

Prints, for each replica of REPLICA_URL, the time of its latest sync, its lag (how long before the store's
latest change it was taken: about REPLICA_SYNC_INTERVAL while it keeps up) and the bytes it holds (snapshots
and WAL segments of every generation kept). Serve replicates to them with Litestream (docs/backup.md).

Options:
  --max-lag SECONDS   A replica further behind than this fails the check (default 60)

Exit codes: 0 every replica reachable and within --max-lag, 1 one is not (or failed to answer), 2 usage.
Run it from a monitor: it reads the replicas and the store, and changes nothing.
`;

interface Run {
  code: number | null;
  stdout: string;
  /** Litestream's JSON log lines (its errors among them). */
  errors: string[];
}

/** Runs Litestream with the replicas' configuration; never throws for what Litestream reports. */
export async function litestream(config: Config, args: (configFile: string) => string[]): Promise<Run> {
  const database = sqliteFile(config.databaseUrl)!;
  const file = writeLitestreamConfig({ database, replicas: config.replicaUrls, syncIntervalMs: config.replicaSyncIntervalMs });
  try {
    const [command, argv] = ownerOnlyCommand(litestreamBinary(), args(file.file));
    const child = spawn(command, argv, { env: litestreamEnv(config.replicaUrls, config.litestreamEnv), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('close', (c) => resolve(c));
    });
    const errors = stderr
      .split('\n')
      .map(errorOf)
      .filter((e): e is string => e !== undefined);
    return { code, stdout, errors };
  } finally {
    file.remove();
  }
}

/** The error a Litestream log line reports, or undefined for one that reports none. */
function errorOf(line: string): string | undefined {
  if (line.trim() === '') return undefined;
  try {
    const entry = JSON.parse(line) as { level?: string; msg?: string; error?: string };
    if (entry.level !== 'ERROR') return undefined;
    return entry.error ?? entry.msg ?? line;
  } catch {
    return undefined;
  }
}

/** Rows of one of Litestream's tables (generations, snapshots, wal): column name -> value. */
function table(text: string): Record<string, string>[] {
  const [header, ...lines] = text.split('\n').filter((l) => l.trim() !== '');
  if (!header) return [];
  const names = header.trim().split(/\s+/);
  return lines.map((l) => Object.fromEntries(l.trim().split(/\s+/).map((v, i) => [names[i] ?? String(i), v])));
}

/** Go's duration text (1m2.5s, 450ms, 3.7s) in seconds. */
export function goDurationSeconds(text: string): number {
  const negative = text.startsWith('-');
  let total = 0;
  for (const [, n, unit] of text.replace(/^-/, '').matchAll(/([\d.]+)(h|m(?!s)|s|ms|µs|us|ns)/g)) {
    total += Number(n) * { h: 3600, m: 60, s: 1, ms: 1e-3, µs: 1e-6, us: 1e-6, ns: 1e-9 }[unit as 'h']!;
  }
  return negative ? -total : total;
}

export interface ReplicaReport {
  replica: Replica;
  /** Why it could not be read, or undefined. */
  error?: string;
  syncedAt?: string;
  lagSeconds?: number;
  bytes?: number;
}

async function report(config: Config, replica: Replica): Promise<ReplicaReport> {
  const database = sqliteFile(config.databaseUrl)!;
  const one = (cmd: string) => litestream(config, (file) => [cmd, '-config', file, '-replica', replica.name, database]);
  const generations = await one('generations');
  if (generations.errors.length > 0 || generations.code !== 0) return { replica, error: generations.errors.at(-1) ?? `litestream exited ${generations.code}` };
  const rows = table(generations.stdout);
  if (rows.length === 0) return { replica, error: 'it holds no copy of the store yet' };
  const latest = rows.reduce((a, b) => ((b.end ?? '') > (a.end ?? '') ? b : a));
  const [snapshots, wal] = await Promise.all([one('snapshots'), one('wal')]);
  const failed = [...snapshots.errors, ...wal.errors];
  if (failed.length > 0) return { replica, error: failed.at(-1) };
  const bytes = [...table(snapshots.stdout), ...table(wal.stdout)].reduce((sum, r) => sum + Number(r.size ?? 0), 0);
  return { replica, syncedAt: latest.end, lagSeconds: Math.max(0, goDurationSeconds(latest.lag ?? '0s')), bytes };
}

export async function replicaCommand(args: string[], config: Config): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== 'status') throw new UsageError(`Unknown replica command "${sub}" (replica status).`, 'replica');
  const parsed = commandArgs('replica status', rest, { 'max-lag': { type: 'string' } }, REPLICA_HELP);
  if (!parsed) return 0;
  if (parsed.positionals.length > 0) throw new UsageError(`Unexpected argument "${parsed.positionals[0]}" for "replica status".`, 'replica status');
  const raw = parsed.values['max-lag'] ?? '60';
  if (!/^\d+(\.\d+)?$/.test(raw)) throw new UsageError(`--max-lag takes seconds, such as 60 (got "${raw}").`, 'replica status');
  const maxLag = Number(raw);
  if (config.replicaUrls.length === 0) throw new Error('REPLICA_URL is not set: there is no replica to report on (docs/backup.md).');
  const file = sqliteFile(config.databaseUrl);
  if (file === undefined || file === ':memory:') throw new Error('Replicas are of a SQLite store: DATABASE_URL names none.');
  const reports = await Promise.all(config.replicaUrls.map((r) => report(config, r)));
  let code = 0;
  for (const r of reports) {
    const head = `${r.replica.name}  ${r.replica.shown}`;
    if (r.error !== undefined) {
      code = 1;
      process.stdout.write(`${head}  unreachable: ${r.error}\n`);
      continue;
    }
    const behind = r.lagSeconds! > maxLag;
    if (behind) code = 1;
    process.stdout.write(
      `${head}  synced ${r.syncedAt}  lag ${r.lagSeconds!.toFixed(1)}s  ${r.bytes!.toLocaleString('en-US')} bytes  ${behind ? `behind by more than ${maxLag}s` : 'ok'}\n`,
    );
  }
  return code;
}
