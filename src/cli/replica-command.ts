// `plant-store replica status`: each replica as Litestream reports it, asked with the configuration serve gives
// it (replication/litestream.ts), so it sees the replicas serve writes to, by the same names.
import type { Config } from '../config.js';
import { statSync } from 'node:fs';
import { runLitestream } from '../replication/litestream.js';
import { readReplicationStatus, STATUS_FRESH_MS } from '../replication/replication-status.js';
import type { Replica } from '../replication/replica-urls.js';
import { databaseFile } from '../storage/engines.js';
import { commandArgs, UsageError } from './subcommand.js';

export const REPLICA_HELP = `Usage: plant-store replica status [--max-lag SECONDS]

Prints, for each replica of REPLICA_URL, the time of its latest sync, its lag (the age of the oldest change
it does not hold: 0 when it holds every change, about REPLICA_SYNC_INTERVAL under load; as serve measures it
for /metrics) and the bytes it holds (snapshots and WAL segments of every generation kept). Serve replicates
to them with Litestream (docs/backup.md).

Options:
  --max-lag SECONDS   A replica further behind than this fails the check (default 60)

Exit codes: 0 every replica reachable and within --max-lag, 1 one is not (or failed to answer), 2 usage.
Run it from a monitor: it reads the replicas and the store, and changes nothing.
`;

/** Rows of one of Litestream's tables (generations, snapshots, wal): column name -> value. */
function table(text: string): Record<string, string>[] {
  const [header, ...lines] = text.split('\n').filter((l) => l.trim() !== '');
  if (!header) return [];
  const names = header.trim().split(/\s+/);
  return lines.map((l) => Object.fromEntries(l.trim().split(/\s+/).map((v, i) => [names[i] ?? String(i), v])));
}

/** Go's duration text (1m2.5s, 450ms, 3.7s) in seconds. */
function goDurationSeconds(text: string): number {
  const negative = text.startsWith('-');
  let total = 0;
  for (const [, n, unit] of text.replace(/^-/, '').matchAll(/([\d.]+)(h|m(?!s)|s|ms|µs|us|ns)/g)) {
    total += Number(n) * { h: 3600, m: 60, s: 1, ms: 1e-3, µs: 1e-6, us: 1e-6, ns: 1e-9 }[unit as 'h']!;
  }
  return negative ? -total : total;
}

interface ReplicaReport {
  replica: Replica;
  /** Why it could not be read, or undefined. */
  error?: string;
  syncedAt?: string;
  lagSeconds?: number;
  bytes?: number;
}

async function report(config: Config, replica: Replica): Promise<ReplicaReport> {
  // The settings refuse REPLICA_URL on a store with no file.
  const database = databaseFile(config.databaseUrl)!;
  const one = (cmd: string) => runLitestream(config, database, (file) => [cmd, '-config', file, '-replica', replica.name, database]);
  const generations = await one('generations');
  if (generations.errors.length > 0 || generations.code !== 0) return { replica, error: generations.errors.at(-1) ?? `litestream exited ${generations.code}` };
  const rows = table(generations.stdout);
  if (rows.length === 0) return { replica, error: 'it holds no copy of the store yet' };
  const latest = rows.reduce((a, b) => ((b.end ?? '') > (a.end ?? '') ? b : a));
  const [snapshots, wal] = await Promise.all([one('snapshots'), one('wal')]);
  const failed = [...snapshots.errors, ...wal.errors];
  if (failed.length > 0) return { replica, error: failed.at(-1) };
  const bytes = [...table(snapshots.stdout), ...table(wal.stdout)].reduce((sum, r) => sum + Number(r.size ?? 0), 0);
  const measured = lagFromServe(database, replica.name);
  return { replica, syncedAt: latest.end, lagSeconds: measured ?? Math.max(0, goDurationSeconds(latest.lag ?? '0s')), bytes };
}

/**
 * The replica's lag as serve measures it (/metrics): the age of the oldest change the replica does not hold, 0
 * when it holds them all. From the status serve writes beside the store; when serve has stopped, what it last
 * wrote, aged since (a change made after it waits since then); undefined when serve never wrote one.
 */
function lagFromServe(database: string, name: string): number | undefined {
  const status = readReplicationStatus(database);
  const lag = status?.replicas[name]?.lagSeconds;
  if (!status || typeof lag !== 'number' || typeof status.at !== 'number') return undefined;
  const now = Date.now();
  if (now - status.at <= STATUS_FRESH_MS) return lag;
  if (lag > 0) return lag + (now - status.at) / 1_000;
  let changed = 0;
  try {
    changed = statSync(`${database}-wal`).mtimeMs;
  } catch {
    // No WAL: nothing written since it was checkpointed.
  }
  return changed > status.at ? (now - changed) / 1_000 : 0;
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
  // The settings refuse REPLICA_URL with any store but a SQLite file.
  if (config.replicaUrls.length === 0) throw new Error('REPLICA_URL is not set: there is no replica to report on (docs/backup.md).');
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
