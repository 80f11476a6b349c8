// Expand, then contract a release later: the previous release keeps working on the new schema. During an upgrade
// by takeover the old server keeps serving while the new one has already migrated the database, so every
// release's migrations must leave the release before it working.
//
// The previous release is the parent of the newest commit that changed the schema history, the migration lists
// in src/storage/schema-history.ts, src/storage/sqlite/migrations.ts and src/storage/postgres/migrations.ts:
// `git log --first-parent -- <those files>`, newest first (main's own line, so a merge counts against its first
// parent). That is the code that was running when the newest schema change was deployed. A commit whose schema
// files read as its parent's once comments, indentation and blank lines are left out changed no migration list
// and is passed over. While the working tree holds an uncommitted edit of the schema files, that edit is the
// newest change and the previous release is HEAD. There are no tags and package.json's version never changes,
// so history is the only record of releases. Without git history (a tarball, an installed package), or in a
// shallow clone that stops before the change, the test is skipped and says why; in a full clone (CI's
// `git clone`) it runs.
//
// The release is extracted with `git archive` into a new temporary folder and built there with this clone's
// node_modules linked in (test/helpers/previous-release.ts says what of its build runs, and reports any runtime
// package installed here at another version than its own lock's). Its own command makes the database's schema
// and a token; its `serve` starts; the current code (openStore) migrates the database while it serves. Then, from
// the client's side, the still-running release writes, reads, lists, shows the events of its writes in order
// in the feed, delivers each of them to a subscriber, verified, and lists those deliveries; its answers are
// checked against its own OpenAPI document. The current code reads back what it wrote. The release cannot be a
// stale build: its folder is new, the database holds exactly the migrations its own `migrate` listed, and when
// the current code has newer ones, it applies them and the release's `migrate` then refuses the database.
// When both have the same versions (the schema files changed beside the migrations) the test says so and runs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { freshDatabaseUrl } from '../helpers/app.js';
import { lastLine } from '../helpers/cli.js';
import { buildRelease, findPreviousRelease, releaseFetch, runRelease, serveRelease } from '../helpers/previous-release.js';
import { startReceiver } from '../helpers/receiver.js';
import { eventually } from '../helpers/sleep.js';
import { openStore } from '../../src/storage/open-store.js';

interface FeedEvent {
  id: string;
  type: string;
  data: { id: number; name: string; tag?: string; version: number };
}

/** The versions a `plant-store migrate` lists ("0014 event stream tickets: applied"), in order. */
function listedVersions(output: string): number[] {
  return [...output.matchAll(/^(\d{4}) .*: (?:applied|already applied)$/gm)].map((m) => Number(m[1]));
}

test('the previous release, still serving while the current code migrates its database, writes, reads, lists, feeds its events in order and delivers them verified; the current code reads what it wrote', async (t) => {
  const started = Date.now();
  const previous = findPreviousRelease();
  if ('skip' in previous) {
    t.skip(previous.skip);
    return;
  }
  const release = buildRelease(t, previous.commit);
  t.diagnostic(`previous release: ${previous.commit}, ${previous.why}; built in ${release.buildMs} ms (${release.steps.join('; ')})`);
  if (previous.notChanges.length > 0) t.diagnostic(`passed over, comments or layout only: ${previous.notChanges.join(', ')}`);
  if (release.dependencyDifferences.length > 0) {
    t.diagnostic(`it runs on runtime packages other than its lock's: ${release.dependencyDifferences.join(', ')}`);
  }

  // The release's own command makes the schema it knows, and a token.
  const databaseUrl = await freshDatabaseUrl(t);
  const env = { DATABASE_URL: databaseUrl };
  const migrated = await runRelease(release, ['migrate'], env);
  assert.equal(migrated.code, 0, migrated.stderr);
  const releaseVersions = listedVersions(migrated.stdout + migrated.stderr);
  assert.ok(releaseVersions.length > 0, `the release's migrate listed no migration:\n${migrated.stdout}\n${migrated.stderr}`);
  const made = await runRelease(release, ['token', 'create', '--scopes', 'plants:read,plants:write,webhooks:manage', '--name', 'previous-release'], env);
  assert.equal(made.code, 0, made.stderr);
  const token = lastLine(made.stdout);

  const server = await serveRelease(t, release, { ...env, WORKERS: '1', BOOTSTRAP_TOKEN: 'false', WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' });
  const api = releaseFetch(release);
  /** A request to the release with the token; its answer, which must have `status`. */
  const call = async (status: number, method: string, path: string, body?: unknown, contentType = 'application/json') => {
    const res = await api(`${server.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body !== undefined && { 'content-type': contentType }) },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
    assert.equal(res.status, status, `${method} ${path}: ${await res.clone().text()}`);
    return res;
  };

  // A subscriber, and a write on the release's own schema.
  const hook = { secret: '' };
  const rx = await startReceiver(t, () => hook.secret);
  const subscribed = await call(201, 'POST', '/webhooks', { url: rx.url });
  const subscription = (await subscribed.json()) as { id: string; secret: string };
  hook.secret = subscription.secret;
  await call(200, 'POST', '/plants', { id: 1, name: 'Monstera', tag: 'tropical' });

  // The upgrade: the current code migrates the database while the release serves it.
  const { store: upgrading, migrations } = await openStore(databaseUrl);
  await upgrading.close();
  const kept = migrations.filter((m) => m.status === 'already-applied').map((m) => m.version);
  const applied = migrations.filter((m) => m.status === 'applied');
  assert.deepEqual(kept, releaseVersions, 'the database holds exactly the migrations the release listed');
  const releaseVersion = Math.max(...releaseVersions);
  const currentVersion = Math.max(...migrations.map((m) => m.version));
  if (applied.length === 0) {
    // The schema files changed without a new version (code beside the migrations, such as a data step's).
    t.diagnostic(`the release and the current code have the same schema, version ${currentVersion}: nothing was migrated under it`);
  } else {
    t.diagnostic(`schema version ${releaseVersion} -> ${currentVersion} while it served: ${applied.map((m) => `${m.version} ${m.name}`).join(', ')}`);
    // The release is the older build: it refuses, as it should, to migrate a database newer than it knows.
    const refused = await runRelease(release, ['migrate'], env);
    assert.notEqual(refused.code, 0, 'the release migrated a database newer than it knows');
    assert.match(refused.stdout + refused.stderr, new RegExp(`the database has migration ${currentVersion}, newer than this build knows`));
  }
  const logsBefore = server.stdout().length;
  /** The error lines the release logged since the upgrade (its background's failures among them). */
  const releaseErrors = () =>
    server
      .stdout()
      .slice(logsBefore)
      .split('\n')
      .filter((line) => /"level":(5|6)\d/.test(line));

  // Writes on the new schema, through the still-running release.
  await call(200, 'POST', '/plants', { id: 2, name: 'Fern' });
  await call(200, 'POST', '/plants', { id: 3, name: 'Cactus', tag: 'desert' });
  const put = await call(200, 'PUT', '/plants/2', { name: 'Boston fern', tag: 'shade' });
  assert.deepEqual(await put.json(), { id: 2, name: 'Boston fern', tag: 'shade' });
  const patched = await call(200, 'PATCH', '/plants/3', { tag: null }, 'application/merge-patch+json');
  assert.deepEqual(await patched.json(), { id: 3, name: 'Cactus' });
  await call(204, 'DELETE', '/plants/1');

  // Reads.
  const read = await call(200, 'GET', '/plants/2');
  assert.deepEqual(await read.json(), { id: 2, name: 'Boston fern', tag: 'shade' });
  const etag = read.headers.get('etag');
  await call(404, 'GET', '/plants/1');
  const list = await call(200, 'GET', '/plants');
  const listed = (await list.json()) as { id: number; name: string; tag?: string; version: number }[];
  assert.deepEqual(
    listed.map(({ version: _version, ...plant }) => plant),
    [
      { id: 2, name: 'Boston fern', tag: 'shade' },
      { id: 3, name: 'Cactus' },
    ],
  );
  assert.equal(etag, `"${listed[0]!.version}"`, 'GET /plants/2 and the list give its one version');

  // The feed: the events of every write, in commit order (on PostgreSQL a background pass places them).
  const expected = [
    ['newPlant', { id: 1, name: 'Monstera', tag: 'tropical' }],
    ['newPlant', { id: 2, name: 'Fern' }],
    ['newPlant', { id: 3, name: 'Cactus', tag: 'desert' }],
    ['plantUpdated', { id: 2, name: 'Boston fern', tag: 'shade' }],
    ['plantUpdated', { id: 3, name: 'Cactus' }],
    ['plantDeleted', { id: 1 }],
  ] as const;
  let seen = '';
  const feed = await eventually(
    async () => {
      const res = await call(200, 'GET', '/events');
      const events = (await res.json()) as FeedEvent[];
      seen = JSON.stringify(events);
      return events.length >= expected.length && events;
    },
    () => `every write's event in the feed; it held ${seen}; the release logged ${JSON.stringify(releaseErrors())}`,
    15_000,
    50,
  );
  assert.deepEqual(
    feed.map((e) => [e.type, (({ version: _version, ...plant }) => plant)(e.data)]),
    expected,
    'the feed holds each write once, in order',
  );
  const versions = feed.map((e) => e.data.version);
  assert.deepEqual([...versions].sort((a, b) => a - b), versions, 'versions grow with the feed');

  // Each event delivered to the subscriber, its signature verified, its body the feed's data (the receiver also
  // checks each delivery against this clone's document, which subscribers read).
  await rx.until((r) => r.byId.size >= expected.length, 15_000).catch((err: Error) => {
    throw new Error(`${err.message}; the release logged ${JSON.stringify(releaseErrors())}`);
  });
  assert.deepEqual(rx.problems, []);
  for (const e of feed) {
    const delivery = rx.byId.get(e.id);
    assert.ok(delivery, `a delivery with webhook-id ${e.id}`);
    assert.equal(delivery.headers['ce-type'], e.type);
    assert.equal(delivery.body, JSON.stringify(e.data), `the delivery of ${e.id} sends the feed's data`);
  }
  assert.equal(rx.byId.size, expected.length);
  // And it lists them, each with its attempt (the table the newest migration may have changed).
  let listing = '';
  const deliveries = await eventually(
    async () => {
      const res = await call(200, 'GET', `/webhooks/${subscription.id}/deliveries`);
      listing = await res.clone().text();
      const got = (await res.json()) as { eventId: string; status: string; attempts: { statusCode?: number }[] }[];
      return got.length === expected.length && got.every((d) => d.status === 'succeeded') && got;
    },
    () => `every delivery listed as succeeded; listed ${listing}; the release logged ${JSON.stringify(releaseErrors())}`,
    15_000,
    50,
  );
  assert.deepEqual(deliveries.map((d) => d.eventId).sort(), feed.map((e) => e.id).sort());
  for (const d of deliveries) assert.deepEqual(d.attempts.map((a) => a.statusCode), [200]);
  await call(200, 'GET', '/readyz');

  // The current code reads what the release wrote.
  const { store } = await openStore(databaseUrl);
  try {
    assert.equal(await store.getPlant(1n), undefined);
    for (const plant of listed) {
      assert.deepEqual(await store.getPlant(BigInt(plant.id)), {
        id: BigInt(plant.id),
        name: plant.name,
        ...(plant.tag !== undefined && { tag: plant.tag }),
        version: BigInt(plant.version),
      });
    }
  } finally {
    await store.close();
  }

  // Nothing failed in the release's background either, and it stops cleanly.
  assert.deepEqual(releaseErrors(), [], 'the release logged no error on the new schema');
  server.proc.kill('SIGTERM');
  assert.equal(await server.exited, 0, server.stderr());
  t.diagnostic(`took ${Date.now() - started} ms`);
});
