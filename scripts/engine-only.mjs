// The one declaration of engine-specific test files: file -> [the only store it runs on, why]. Everything else
// runs on every store. scripts/test.mjs leaves these files out of the other store's run (saying why), and
// test/setup/engine-only.ts makes such a file run directly on the wrong store fail at once with the reason.
export const ONLY_ON = {
  'dist/test/storage/commit-failure.test.js': ['sqlite', 'breaks the SQLite file and its locks'],
  'dist/test/storage/group-commit.test.js': ['sqlite', 'reads the SQLite file directly'],
  'dist/test/storage/migrations.test.js': ['sqlite', 'SQLite files and migration lists; test/storage/pg-*.test.ts cover PostgreSQL'],
  'dist/test/storage/write-worker.test.js': ['sqlite', 'holds a lock on the SQLite file from another process'],
  'dist/test/storage/sqlite-writer.test.js': ['sqlite', 'the SQLite writer of a cluster worker: one writer per file, which PostgreSQL does not have'],
  'dist/test/storage/count-thread.test.js': ['sqlite', 'the SQLite count thread keeps counts off the event loop; PostgreSQL counts in its server (test/plants/count-lane.test.ts bounds both)'],
  'dist/test/storage/disk-full.test.js': ['sqlite', 'fills the filesystem under a SQLite file'],
  'dist/test/cli/backup.test.js': ['sqlite', 'backs up SQLite files; PostgreSQL uses pg_dump (docs/backup.md), and test/cli/backup-postgres.test.ts'],
  'dist/test/cli/backup-links.test.js': ['sqlite', 'backs up SQLite files next to the store and its -wal'],
  'dist/test/ops/replication.test.js': ['sqlite', 'Litestream replicates a SQLite file; PostgreSQL fails over to a standby (test/scale/)'],
  'dist/test/ops/replication-quiet.test.js': ['sqlite', 'Litestream replicates a SQLite file'],
  'dist/test/console/journey-browser.test.js': ['sqlite', 'the new user reads the replication lag, and Litestream replicates a SQLite file'],
  'dist/test/ops/file-modes.test.js': ['sqlite', 'the modes of SQLite files; PostgreSQL creates no local file'],
  'dist/test/ops/soak-short.test.js': ['sqlite', 'scripts/soak.mjs runs the server on a SQLite file'],
  'dist/test/ops/group-stop-logs.test.js': ['sqlite', 'how processes write their last log lines at a stop does not depend on the store, and 21 starts of three processes are run once'],
  'dist/test/auth/secret-storage.test.js': ['sqlite', 'scans the SQLite file bytes for secrets'],
  'dist/test/storage/pg-cluster.test.js': ['postgres', 'the PostgreSQL test helper'],
  'dist/test/cli/backup-postgres.test.js': ['postgres', 'runs the pg_dump and pg_restore recipe of docs/backup.md'],
  'dist/test/storage/pg-store.test.js': ['postgres', 'PostgreSQL-specific behaviour'],
  'dist/test/storage/pg-outage.test.js': ['postgres', 'PostgreSQL outages'],
  'dist/test/storage/pg-commit-unknown.test.js': ['postgres', 'cuts a PostgreSQL connection at COMMIT'],
  'dist/test/scale/scale-out.test.js': ['postgres', 'several instances behind HAProxy share one database, which needs PostgreSQL'],
  'dist/test/events/events-instances.test.js': ['postgres', 'instances sharing one database tell each other of new events with LISTEN/NOTIFY; one SQLite file has one server'],
  'dist/test/webhooks/secret-rotation-instances.test.js': ['postgres', 'a rolling key rotation over two instances sharing one database; one SQLite file has one server'],
  'dist/test/scale/outage-under-load.test.js': ['postgres', 'stops and restarts the PostgreSQL server under load'],
  'dist/test/scale/failover.test.js': ['postgres', 'fails over from a PostgreSQL primary to its streaming standby under load'],
  'dist/test/scale/takeover-instances.test.js': ['postgres', 'several instances behind HAProxy share one database, which needs PostgreSQL'],
};

/** Why `file` (relative to the repository root) cannot run on `store`, or undefined when it can. */
export function wrongStore(file, store) {
  const only = ONLY_ON[file];
  if (!only || only[0] === store) return undefined;
  return `${file} runs only on ${only[0]} (${only[1]}), not on ${store}`;
}
