// The replication status serve writes beside the store each second (replication/supervisor.ts), read by
// `replica status` and GET /status. Kept apart from the supervisor, so that reading it loads no Litestream code.
import { readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/**
 * Each replica's lag as serve measured it at `at` (ms since the epoch), and when it last wrote a segment or
 * snapshot (`lastSyncAt`, ms since the epoch).
 */
export interface ReplicationStatus {
  at: number;
  replicas: Record<string, { lagSeconds: number; lastSyncAt?: number }>;
}

/** How old a status may be and still say how the replicas stand now: serve writes one each second. */
export const STATUS_FRESH_MS = 5_000;

/** The status serve last wrote beside `database`; undefined when there is none or it cannot be read. */
export function readReplicationStatus(database: string): ReplicationStatus | undefined {
  try {
    const status = JSON.parse(readFileSync(statusFile(database), 'utf8')) as ReplicationStatus;
    return status && typeof status === 'object' && status.replicas && typeof status.replicas === 'object' ? status : undefined;
  } catch {
    return undefined;
  }
}

/** Where serve keeps its replication status: an owner-only file beside the store, read by `replica status`. */
export function statusFile(database: string): string {
  return join(dirname(database), `.${basename(database)}-replication.json`);
}
