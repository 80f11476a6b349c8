// GET /status: what is running and how its store and replicas stand, for operators and the console's Status view.
// Replication is read from the status serve writes beside the store each second (replication/supervisor.ts), so
// every worker answers with what the process that replicates measured.
import type { Store } from '../storage/store.js';
import { STATUS_FRESH_MS, type ReplicationStatus } from '../replication/replication-status.js';
import { VERSION } from './version.js';

export interface StatusSources {
  store: Pick<Store, 'engine' | 'sizeBytes'>;
  /** The processes that serve HTTP. */
  workers: number;
  /** The replicas' names (REPLICA_URL), and where their status is read; none without replication. */
  replicas: readonly string[];
  replication?: () => ReplicationStatus | undefined;
}

const STARTED = Date.now() - Math.round(process.uptime() * 1_000);

export function statusHandlers(sources: StatusSources) {
  return {
    async getStatus() {
      const now = Date.now();
      const replication = sources.replicas.length > 0 ? sources.replication?.() : undefined;
      const fresh = replication !== undefined && now - replication.at <= STATUS_FRESH_MS;
      const sizeBytes = await sources.store.sizeBytes();
      return {
        service: 'plant-store' as const,
        version: VERSION,
        at: new Date(now).toISOString(),
        startedAt: new Date(STARTED).toISOString(),
        uptimeSeconds: Math.round((now - STARTED) / 100) / 10,
        workers: sources.workers,
        store: { engine: sources.store.engine, ...(sizeBytes !== undefined && { sizeBytes }) },
        replicas: sources.replicas.map((name) => {
          const r = replication?.replicas[name];
          const lagSeconds = Math.round((r?.lagSeconds ?? 0) * 10) / 10;
          const state = !fresh || !r ? 'unknown' : r.lagSeconds > 0 ? 'behind' : 'synced';
          return { name, state, lagSeconds, ...(r?.lastSyncAt !== undefined && { lastSyncAt: new Date(r.lastSyncAt).toISOString() }) };
        }),
      };
    },
  };
}
