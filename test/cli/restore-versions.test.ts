// After a restore from a backup nothing issued before it is issued again: backup, then changes, then the
// documented restore (SQLite: plant-store restore --force into the same stopped store; PostgreSQL: pg_dump,
// pg_restore into a new database, plant-store migrate --after-restore), then a PATCH. Its ETag and its event's
// version are above every one issued before the restore, so no If-None-Match of an earlier ETag answers 304 for
// the changed plant, and a stale If-Match is 412. A feed cursor of an event made after the backup answers 410
// with an Error body that says where to start again; a never-issued id is still 400.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { errorOf, freshDatabaseUrl, runCli, spawnServer, tempDir, TEST_STORE, type ChildServer } from '../helpers/app.js';
import { findPgBinDir } from '../helpers/pg-cluster.js';
import { newEventId } from '../../src/events/event.js';

function tool(name: string, args: string[]): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile(join(findPgBinDir(), name), args, (err, _stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stderr }));
  });
}

interface FeedEvent {
  id: string;
  type: string;
  data: { id: number; version: number };
}

/** A plant-store client over HTTP with one token. */
function client(server: ChildServer, secret: string) {
  const auth = { authorization: `Bearer ${secret}` };
  return {
    post: (body: unknown) => fetch(`${server.url}/plants`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    patch: (id: number, body: unknown, headers: Record<string, string> = {}) =>
      fetch(`${server.url}/plants/${id}`, { method: 'PATCH', headers: { ...auth, 'content-type': 'application/merge-patch+json', ...headers }, body: JSON.stringify(body) }),
    get: (id: number, headers: Record<string, string> = {}) => fetch(`${server.url}/plants/${id}`, { headers: { ...auth, ...headers } }),
    events: (query: string) => fetch(`${server.url}/events${query}`, { headers: auth }),
  };
}

/** The events after `after` (from the oldest without it), waiting for the first `n` of them. */
async function eventsAfter(c: ReturnType<typeof client>, after: string | undefined, n: number): Promise<FeedEvent[]> {
  const seen: FeedEvent[] = [];
  let cursor = after;
  while (seen.length < n) {
    const res = await c.events(`?limit=1000&wait=10${cursor ? `&after=${cursor}` : ''}`);
    assert.equal(res.status, 200, await res.clone().text());
    const page = (await res.json()) as FeedEvent[];
    assert.ok(page.length > 0, `waited for ${n} events after ${after}, got ${seen.length}`);
    seen.push(...page);
    cursor = page.at(-1)!.id;
  }
  return seen;
}

function versionOf(res: Response): bigint {
  const etag = res.headers.get('etag');
  assert.match(etag ?? '', /^"\d+"$/);
  return BigInt(etag!.slice(1, -1));
}

const max = (vs: Iterable<bigint>) => [...vs].reduce((a, b) => (b > a ? b : a));

/** The store's steps of docs/backup.md: a backup while it serves, and a restore of it into a stopped store. */
async function recipe(t: TestContext, env: Record<string, string>) {
  const dir = tempDir(t);
  if (TEST_STORE === 'sqlite') {
    const file = join(dir, 'backup.db');
    return {
      backup: async () => assert.equal((await runCli(['backup', file], env)).code, 0),
      // Into the same store, which held the changes made since the backup.
      restore: async () => {
        const r = await runCli(['restore', '--force', file], env);
        assert.equal(r.code, 0, r.stderr);
        assert.match(r.stdout, /^Versions continue above \d+: no ETag or event version issued before the restore is issued again\.$/m);
        return env;
      },
    };
  }
  const dump = join(dir, 'plant-store.dump');
  return {
    backup: async () => {
      const r = await tool('pg_dump', ['--format=custom', `--file=${dump}`, `--dbname=${env.DATABASE_URL}`]);
      assert.equal(r.code, 0, r.stderr);
    },
    restore: async () => {
      const restoredEnv = { ...env, DATABASE_URL: await freshDatabaseUrl(t) };
      const r = await tool('pg_restore', ['--exit-on-error', '--single-transaction', '--no-owner', `--dbname=${restoredEnv.DATABASE_URL}`, dump]);
      assert.equal(r.code, 0, r.stderr);
      const after = await runCli(['migrate', '--after-restore'], restoredEnv);
      assert.equal(after.code, 0, after.stderr);
      assert.match(after.stdout, /^Versions continue above \d+: no ETag or event version issued before the restore is issued again\.$/m);
      return restoredEnv;
    },
  };
}

test('after backup, changes and restore, no ETag or event version is issued again; cursors made after the backup are 410, never-issued ids 400', async (t) => {
  const env = { DATABASE_URL: await freshDatabaseUrl(t, 'store.db'), BOOTSTRAP_TOKEN: 'false' };
  assert.equal((await runCli(['migrate'], env)).code, 0);
  const token = await runCli(['token', 'create', '--name', 'ops', '--scopes', 'plants:read,plants:write'], env);
  assert.equal(token.code, 0, token.stderr);
  const secret = token.stdout.trim().split('\n').at(-1)!;
  const steps = await recipe(t, env);

  const first = await spawnServer(t, env);
  let c = client(first, secret);
  const issued = new Set<bigint>();
  const created = await c.post({ id: 1, name: 'fern' });
  assert.equal(created.status, 200);
  issued.add(versionOf(created));
  const backedUp = await c.patch(1, { tag: 'green' });
  assert.equal(backedUp.status, 200);
  issued.add(versionOf(backedUp));
  const [, kept] = await eventsAfter(c, undefined, 2);

  await steps.backup();
  // Changes the restore will undo: each takes versions the restored counter must never issue again.
  const stale: Response[] = [];
  for (const name of ['moss', 'ivy', 'tree fern']) stale.push(await c.patch(1, { name }));
  stale.push(await c.post({ id: 2, name: 'lichen' }));
  for (const r of stale) {
    assert.equal(r.status, 200);
    issued.add(versionOf(r));
  }
  const lost = await eventsAfter(c, kept!.id, 4);
  for (const e of lost) issued.add(BigInt(e.data.version));
  first.proc.kill('SIGTERM');
  assert.equal(await first.exited, 0);

  const restoredEnv = await steps.restore();
  const second = await spawnServer(t, restoredEnv);
  c = client(second, secret);
  // The plant is as the backup held it, with the ETag it had then.
  const back = await c.get(1);
  assert.equal(back.status, 200);
  assert.equal(versionOf(back), versionOf(backedUp));
  // An ETag issued after the backup names no version the plant has.
  const staleTag = stale[2]!.headers.get('etag')!;
  const refused = await c.patch(1, { name: 'stale' }, { 'if-match': staleTag });
  assert.equal(refused.status, 412);

  const changed = await c.patch(1, { name: 'after the restore' }, { 'if-match': backedUp.headers.get('etag')! });
  assert.equal(changed.status, 200);
  const newest = versionOf(changed);
  assert.ok(newest > max(issued), `ETag ${newest} after the restore is not above ${max(issued)}, issued before it`);
  const [event] = await eventsAfter(c, kept!.id, 1);
  assert.equal(event!.type, 'plantUpdated');
  assert.equal(BigInt(event!.data.version), newest);
  for (const v of issued) {
    const res = await c.get(1, { 'if-none-match': `"${v}"` });
    assert.equal(res.status, 200, `If-None-Match "${v}", issued before the restore, answered ${res.status} for the changed plant`);
  }

  // A cursor the restored log holds still works; one of an event made after the backup is 410 with where to start.
  assert.equal((await c.events(`?after=${kept!.id}`)).status, 200);
  for (const e of lost) {
    const res = await c.events(`?after=${e.id}`);
    assert.equal(res.status, 410);
    const body = await errorOf(res);
    assert.match(body.message, new RegExp(`^The event ${e.id} is not in the feed: the store was restored from a backup at \\S+Z, and the events made after that backup were lost`));
    assert.match(body.message, /Start again from the oldest event kept: GET \/events without after/);
  }
  // Ids never issued: one of random bytes, one made a day before the backup (not in its window).
  for (const id of [`msg_${randomBytes(16).toString('base64url')}`, newEventId(Date.now() - 86_400_000)]) {
    const res = await c.events(`?after=${id}`);
    assert.equal(res.status, 400, id);
    assert.match((await errorOf(res)).message, /names no event of the feed/);
  }
});
