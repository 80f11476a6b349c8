// Counts over many matches (Prefer: count=exact) on SQLite run on the store's count thread, not on the event
// loop: another client's GET is answered while counts are in flight, and a server stopped while counts run
// answers them and exits; waiting counts take turns across tokens. (PostgreSQL counts in its server; the count lane's bounds: test/plants/count-lane.test.ts.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import type DatabaseType from 'better-sqlite3';
import { errorOf, migratedDatabaseUrl, runCli, spawnServer, startApp } from '../helpers/app.js';

const Database = createRequire(import.meta.url)('better-sqlite3') as typeof DatabaseType;

/** Enough matches that a count takes a few milliseconds: eight of them hold a thread far longer than one GET. */
const PLANTS = 30_000;
const COUNTED = '/plants?q=fern&limit=5';

/** A migrated SQLite store holding PLANTS plants, every one named with "fern", written straight into the file. */
async function seededUrl(t: Parameters<typeof migratedDatabaseUrl>[0]): Promise<string> {
  const url = await migratedDatabaseUrl(t);
  const db = new Database(url.slice('sqlite:'.length));
  db.exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${PLANTS})
    INSERT INTO plants (id, name, tag, created_at, name_folded) SELECT i, 'Fern ' || i, 'seed', 0, 'fern ' || i FROM n`);
  db.close();
  return url;
}

test('a GET of another token is answered while counts over every plant are in flight', async (t) => {
  const s = await startApp(t, { databaseUrl: await seededUrl(t), config: { countsMaxWaitingPerToken: 16 } });
  let answered = 0;
  const counts = Array.from({ length: 8 }, () =>
    fetch(`${s.url}${COUNTED}`, { headers: { authorization: `Bearer ${s.token.all}`, prefer: 'count=exact' } }).then((res) => {
      answered++;
      return res;
    }),
  );
  const get = await fetch(`${s.url}/plants/5`, { headers: { authorization: `Bearer ${s.token.read}` } });
  const countsAnsweredBeforeGet = answered;
  assert.equal(get.status, 200);
  assert.deepEqual(await get.json(), { id: 5, name: 'Fern 5', tag: 'seed' });
  assert.ok(countsAnsweredBeforeGet < counts.length, 'the GET was answered before every count was');
  for (const res of await Promise.all(counts)) {
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-total-count'), String(PLANTS));
    await res.arrayBuffer();
  }
});

test('waiting counts take turns across tokens: a second token\'s count is answered before the first token\'s later ones', async (t) => {
  const s = await startApp(t, { databaseUrl: await seededUrl(t), config: { countsMaxWaitingPerToken: 4 } });
  const order: string[] = [];
  const counted = (token: string, name: string) =>
    fetch(`${s.url}${COUNTED}`, { headers: { authorization: `Bearer ${token}`, prefer: 'count=exact' } }).then(async (res) => {
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('x-total-count'), String(PLANTS));
      await res.arrayBuffer();
      order.push(name);
    });
  const first = [1, 2, 3, 4].map((i) => counted(s.token.all, `A${i}`));
  await Promise.all([...first, counted(s.token.read, 'B')]);
  // A1 runs while the others arrive; then A and B alternate: B comes before A's last.
  assert.ok(order.indexOf('B') < order.indexOf('A4'), `answered in the order ${order.join(', ')}`);
});

test('SIGTERM while counts run: each is answered (its count, or 503) and the server exits 0', async (t) => {
  const databaseUrl = await seededUrl(t);
  const created = await runCli(['token', 'create', '--scopes', 'plants:read', '--name', 'counter'], { DATABASE_URL: databaseUrl });
  const token = created.stdout.trim().split('\n').pop()!.trim();
  const server = await spawnServer(t, { DATABASE_URL: databaseUrl, BOOTSTRAP_TOKEN: 'false', COUNTS_MAX_WAITING_PER_TOKEN: '16' });
  const counts = Array.from({ length: 6 }, () => fetch(`${server.url}${COUNTED}`, { headers: { authorization: `Bearer ${token}`, prefer: 'count=exact' } }));
  // The first count is running once its thread has been asked: the server is stopped with the others waiting.
  await counts[0];
  server.proc.kill('SIGTERM');
  for (const res of await Promise.all(counts)) {
    if (res.status === 200) assert.equal(res.headers.get('x-total-count'), String(PLANTS));
    else assert.equal((await errorOf(res)).error, 503);
  }
  assert.equal(await server.exited, 0, server.stderr());
});
