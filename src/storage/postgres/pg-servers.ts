// Which keys the servers running on a PostgreSQL database hold, for `plant-store secrets rotate`: every server
// keeps one LISTEN connection open for as long as it runs (pg-events.ts), and names it with its key ids, which
// pg_stat_activity shows any role (the application_name of another role's session is not hidden). A server
// that stops, or whose connection is lost, leaves the list with it.
import type { RunningServer } from '../store.js';
import { pgDriver } from './pool.js';

const LISTENER = 'plant-store events';
const KEYS = ' keys=';
/** PostgreSQL keeps the first 63 bytes of an application_name. */
const NAME_BYTES = 63;

/** The LISTEN connection's application_name: with the key ids of a serving process, when they fit. */
export function listenerName(serving?: { keyIds: readonly string[] }): string {
  if (!serving) return LISTENER;
  const name = `${LISTENER}${KEYS}${serving.keyIds.join(',')}`;
  // A name cut short would hide a key: too many keys to name reads as a server that does not say its keys.
  return Buffer.byteLength(name) <= NAME_BYTES ? name : LISTENER;
}

/** The key ids an application_name gives: undefined when it names none (too many, or an older version). */
function keyIdsOf(name: string): string[] | undefined {
  if (!name.startsWith(LISTENER + KEYS)) return undefined;
  const ids = name.slice(LISTENER.length + KEYS.length);
  return ids === '' ? [] : ids.split(',');
}

export async function runningOnDatabase(url: string, connectTimeoutMs = 5_000): Promise<RunningServer[]> {
  const client = new (pgDriver().Client)({ connectionString: url, application_name: 'plant-store cli', connectionTimeoutMillis: connectTimeoutMs });
  await client.connect();
  try {
    const { rows } = await client.query<{ pid: number; name: string; addr: string | null }>(
      `SELECT pid, application_name AS name, client_addr::text AS addr FROM pg_stat_activity
        WHERE datname = current_database() AND (application_name = $1 OR application_name LIKE $2) ORDER BY backend_start`,
      [LISTENER, `${LISTENER}${KEYS}%`],
    );
    return rows.map((r) => ({ where: `the server${r.addr ? ` at ${r.addr}` : ''} on connection ${r.pid}`, keyIds: keyIdsOf(r.name) }));
  } finally {
    await client.end().catch(() => {});
  }
}
