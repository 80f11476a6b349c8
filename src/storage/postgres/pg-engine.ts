// The PostgreSQL engine as the rest of the service sees it (storage/engines.ts lists it): its DATABASE_URL
// (`postgres://` or `postgresql://`, handed to the driver as written), how an operator is told of the database
// (host, port and name, never the password), its own tools where backup and replication are asked of
// plant-store, the settings it adds (pg-settings.ts: its pool and timeouts), and how its store opens.
import type { Engine } from '../store.js';
import type { EngineTools } from '../engine-tools.js';
import { PG_SETTINGS, type PgSettings } from './pg-settings.js';
import { PgStore, type PgStoreOptions } from './pg-store.js';
import { runningOnDatabase } from './pg-servers.js';
import { describeTarget } from './pool.js';

export const postgresEngine: Engine<PgStoreOptions> & EngineTools<PgSettings> = {
  urlForm: 'postgres://USER:PASSWORD@HOST:PORT/DATABASE',
  urlNotes: 'also postgresql://; libpq parameters such as ?sslmode=require work',
  accepts: (url) => /^postgres(ql)?:\/\//.test(url),
  urlProblem(url) {
    let parsed: URL | undefined;
    try {
      parsed = new URL(url);
    } catch {
      // reported below
    }
    if (!parsed || (!parsed.hostname && !parsed.searchParams.get('host'))) return 'is not a valid postgres:// URL (postgres://USER:PASSWORD@HOST:PORT/DATABASE)';
    return undefined;
  },
  describe: (url) => `the PostgreSQL database ${describeTarget(url)}`,
  localFile: () => undefined,
  settings: PG_SETTINGS,
  ownTools: { backup: 'pg_dump', restore: 'pg_restore', replica: 'on PostgreSQL run a synchronous standby instead (docs/deployment.md, PostgreSQL)' },
  // PostgreSQL's "database does not exist", which the server meets too.
  absentFrom(url, err) {
    if (((err as Error).cause as { code?: string } | undefined)?.code !== '3D000') return undefined;
    const name = decodeURIComponent(new URL(url).pathname.slice(1));
    return { said: `The PostgreSQL database "${name}" does not exist on ${describeTarget(url).split('/')[0]}`, create: `createdb ${name}` };
  },
  // Every process its own pool: the database server orders their writes.
  sharing: () => 'independent',
  create: (url, options) => new PgStore(url, options),
  runningServers: (url, options) => runningOnDatabase(url, options.connectTimeoutMs),
};
