// The rest of the store ports' promises, on the store under test (PLANT_STORE_TEST_STORE), beside the other
// store-contract-*.test.ts files (plants, lists, writes, tokens) and test/webhooks/delivery-store-*.test.ts (the
// webhook half): writes another process sent, served as they are (serveWrite), the store's own housekeeping (migrate, ping,
// connectionLimit, sizeBytes), a subscription's secret replaced, the event log (cursor, retention, backlog, passIdle,
// watch) and the restore half. The last test holds the suite to every method the ports declare.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { PlantWrite, VersionedPlant } from '../../src/plants/plant.js';
import type { WriteOutcome } from '../../src/storage/plant-writes.js';
import { decodeOutcomes, encodeItems, type WireOutcomes } from '../../src/storage/writer-wire.js';
import { freshDatabaseUrl, TEST_STORE } from '../helpers/app.js';
import { sequenced } from '../helpers/events.js';
import { eventually } from '../helpers/sleep.js';
import { addSubscription } from '../helpers/webhooks.js';
import { freshStore, unversioned } from '../helpers/contract-store.js';



const UNKNOWN_EVENT = `msg_${'A'.repeat(22)}`;

// A shared-writer engine (SQLite) serves the plant batches its workers send (process/primary.ts); a database
// server's workers write on their own, so it has no serveWrite.
test('serveWrite: a plant batch another process sent is committed write by write, each answered with what it did: its new version, or the plant it changed, found or left', async (t) => {
  const store = await freshStore(t);
  if (TEST_STORE === 'postgres') {
    assert.equal(store.serveWrite, undefined);
    return;
  }
  const serve = async (items: PlantWrite[]): Promise<WriteOutcome[]> => {
    if (!store.serveWrite) throw new Error('a shared-writer engine serves writes');
    const { reply } = await store.serveWrite({ name: 'plants', args: [encodeItems(items)] });
    assert.ok(reply.ok, reply.ok ? '' : reply.message);
    return decodeOutcomes(reply.result as WireOutcomes);
  };
  const [created, again] = await serve([
    { op: 'create', plant: { id: 1n, name: 'fern' } },
    { op: 'create', plant: { id: 1n, name: 'fern' } },
  ]);
  assert.equal(created!.kind, 'created');
  const v1 = (created as { version: bigint }).version;
  assert.deepEqual(again, { kind: 'replayed', version: v1 });
  assert.deepEqual(await store.getPlant(1n), { id: 1n, name: 'fern', version: v1 });

  const [replaced] = await serve([{ op: 'replace', plant: { id: 1n, name: 'moss', tag: 'green' }, ifVersion: v1 }]);
  assert.deepEqual(unversioned(replaced), { kind: 'changed', plant: { id: 1n, name: 'moss', tag: 'green' } });
  const v2 = (replaced as { plant: VersionedPlant }).plant.version;
  assert.ok(v2 > v1);
  // A version the row no longer has: nothing written, the row as it is.
  const [stale] = await serve([{ op: 'replace', plant: { id: 1n, name: 'ivy' }, ifVersion: v1 }]);
  assert.deepEqual(stale, { kind: 'version-mismatch', current: { id: 1n, name: 'moss', tag: 'green', version: v2 } });

  const [patched] = await serve([{ op: 'patch', id: 1n, patch: { tag: null }, ifVersions: undefined }]);
  assert.deepEqual(unversioned(patched), { kind: 'changed', plant: { id: 1n, name: 'moss' } });
  assert.deepEqual(await store.getPlant(1n), (patched as { plant: VersionedPlant }).plant);

  const [deleted, absent] = await serve([
    { op: 'delete', id: 1n, ifVersion: undefined },
    { op: 'delete', id: 2n, ifVersion: undefined },
  ]);
  assert.deepEqual(unversioned(deleted), { kind: 'changed', plant: { id: 1n, name: 'moss' } });
  assert.deepEqual(absent, { kind: 'not-found' });
  assert.equal(await store.getPlant(1n), undefined);
  assert.equal(await store.countPlants(), 0);
});

test('migrate on a migrated store applies nothing; ping answers; connectionLimit is a database server\'s only; sizeBytes grows with what is written', async (t) => {
  const store = await freshStore(t);
  const empty = await store.sizeBytes();
  assert.ok(empty !== undefined && empty > 0, `a store in a file or on a server has a size: ${empty}`);
  for (let i = 1; i <= 200; i++) await store.createPlant({ id: BigInt(i), name: `a plant that takes some room ${'x'.repeat(500)}` });
  assert.ok((await store.sizeBytes())! > empty, 'it grows with what is written');
  const results = await store.migrate();
  assert.ok(results.length > 0);
  assert.deepEqual(new Set(results.map((r) => r.status)), new Set(['already-applied']));
  await store.ping();
  assert.equal(typeof store.connectionLimit === 'function', TEST_STORE === 'postgres');
  if (store.connectionLimit) {
    const limit = await store.connectionLimit();
    assert.ok(Number.isInteger(limit) && limit > 0, String(limit));
  }
});

test('replaceSecret replaces a subscription\'s secret only from the one it holds', async (t) => {
  const store = await freshStore(t);
  const sub = await addSubscription(store, 'http://127.0.0.1:1/a');
  const next = 'whsec_' + Buffer.alloc(32, 7).toString('base64');
  assert.equal(await store.webhooks.replaceSecret(sub.id, 'whsec_not-the-one', next), false);
  assert.equal((await store.webhooks.getSubscription(sub.id))!.secret, sub.secret);
  assert.equal(await store.webhooks.replaceSecret(sub.id, sub.secret, next), true);
  assert.equal((await store.webhooks.getSubscription(sub.id))!.secret, next);
  assert.equal(await store.webhooks.replaceSecret('wh_none', next, sub.secret), false);
});

test('the event log: a cursor names a placed event\'s position; retention removes the oldest first, and their cursors then say through where', async (t) => {
  const store = await freshStore(t);
  assert.deepEqual(await store.events.backlog(), { unplaced: 0, behind: 0 });
  assert.deepEqual(await store.events.cursor(UNKNOWN_EVENT), { kind: 'unknown', removedThrough: 0n, restores: [] });
  assert.equal(await store.events.lastPosition(), 0n, 'no event placed yet');
  for (const id of [1n, 2n, 3n]) await store.createPlant({ id, name: `p${id}` });
  assert.deepEqual(await store.events.sequence(100, new Date()), { events: 3, deliveries: 0, more: false });
  assert.deepEqual(await store.events.sequence(100, new Date()), { events: 0, deliveries: 0, more: false });
  assert.deepEqual(await store.events.backlog(), { unplaced: 0, behind: 0 });
  if (store.events.passIdle) assert.equal(store.events.passIdle(), true, 'every event placed, no subscription: a pass would do nothing');
  const events = await store.events.readAfter(null, 10);
  assert.equal(events.length, 3);
  for (const e of events) assert.deepEqual(await store.events.cursor(e.id), { kind: 'at', position: e.position });
  assert.equal(await store.events.lastPosition(), events[2]!.position);

  const later = new Date(Date.now() + 60_000);
  assert.equal(await store.events.removeOlderThan(later, 2), 2);
  assert.deepEqual((await store.events.readAfter(null, 10)).map((e) => e.id), [events[2]!.id]);
  assert.deepEqual(await store.events.cursor(events[0]!.id), { kind: 'unknown', removedThrough: events[1]!.position, restores: [] });
  // Nothing created before a cutoff in the past.
  assert.equal(await store.events.removeOlderThan(new Date(0), 10), 0);
  assert.equal(await store.events.removeOlderThan(later, 10), 1);
  assert.deepEqual(await store.events.readAfter(null, 10), []);
  assert.equal(await store.events.lastPosition(), events[2]!.position, 'retention keeps the log\'s end');
});

test('watch: a listener hears of events another process sequenced (PostgreSQL), and is removed by what watch returns', async (t) => {
  const databaseUrl = await freshDatabaseUrl(t);
  const store = await freshStore(t, databaseUrl);
  let heard = 0;
  const unwatch = store.events.watch(() => heard++);
  assert.equal(typeof unwatch, 'function');
  if (TEST_STORE === 'postgres') {
    // The other process: a second store on the same database, running its own pass.
    const other = await freshStore(t, databaseUrl);
    // Its LISTEN is up once a notification it was sent arrives; until then the other store keeps writing.
    let id = 0n;
    await eventually(async () => {
      await other.createPlant({ id: ++id, name: 'elsewhere' });
      await sequenced(other);
      return heard > 0;
    }, 'the listener told of the other store\'s pass', 10_000, 50);
  }
  unwatch();
  const before = heard;
  await store.createPlant({ id: 100n, name: 'here' });
  await sequenced(store);
  assert.equal(heard, before, 'a removed listener is not called for this process\'s own pass');
});

test('restores: facts say the last version issued and the newest event; record moves the counter up, never down, and the feed learns of it', async (t) => {
  const store = await freshStore(t);
  const empty = await store.restores.facts();
  assert.equal(empty.newestEventAt, null);
  const created = await store.createPlant({ id: 1n, name: 'fern' });
  assert.equal(created.kind, 'created');
  await sequenced(store);
  const [event] = await store.events.readAfter(null, 1);
  const facts = await store.restores.facts();
  assert.equal(facts.lastVersion, created.kind === 'created' ? created.version : -1n);
  assert.ok(facts.lastVersion >= empty.lastVersion);
  assert.deepEqual(facts.newestEventAt, event!.createdAt);

  const restoredAt = new Date('2026-01-02T03:04:05.678Z');
  await store.restores.record({ restoredAt, newestEventAt: facts.newestEventAt, versionsFrom: facts.lastVersion + 1_000n });
  assert.equal((await store.restores.facts()).lastVersion, facts.lastVersion + 1_000n);
  const next = await store.createPlant({ id: 2n, name: 'moss' });
  assert.ok(next.kind === 'created' && next.version > facts.lastVersion + 1_000n, 'a version above the restored counter');
  // Never down.
  await store.restores.record({ restoredAt: new Date(restoredAt.getTime() + 1_000), newestEventAt: null, versionsFrom: 1n });
  assert.ok((await store.restores.facts()).lastVersion >= facts.lastVersion + 1_001n);
  // A cursor naming no event now names the restores, newest first.
  const cursor = await store.events.cursor(UNKNOWN_EVENT);
  assert.deepEqual(cursor, {
    kind: 'unknown',
    removedThrough: 0n,
    restores: [
      { restoredAt: new Date(restoredAt.getTime() + 1_000), newestEventAt: null },
      { restoredAt, newestEventAt: facts.newestEventAt },
    ],
  });
});

/** The methods an interface declares in a source file (`name(` or `name?(` at its first level). */
function methodsOf(file: string, name: string): string[] {
  const text = readFileSync(fileURLToPath(new URL(`../../../src/${file}`, import.meta.url)), 'utf8');
  const start = text.indexOf(`export interface ${name} `);
  assert.ok(start >= 0, `${name} in src/${file}`);
  const body = text.slice(start, text.indexOf('\n}', start));
  return [...body.matchAll(/^ {2}([a-zA-Z]+)\??\(/gm)].map((m) => m[1]!);
}

test('the contract suite calls every method of every store port', () => {
  const ports: [string, string][] = [
    ['storage/store.ts', 'Store'],
    ['plants/plant.ts', 'PlantStore'],
    ['auth/token.ts', 'TokenStore'],
    ['webhooks/delivery.ts', 'WebhookStore'],
    ['events/event-log.ts', 'EventLogStore'],
    ['storage/restores.ts', 'RestoreStore'],
  ];
  const suite = [
    'storage/store-contract-plants.test.ts',
    'storage/store-contract-lists.test.ts',
    'storage/store-contract-writes.test.ts',
    'storage/store-contract-tokens.test.ts',
    'storage/store-contract-ports.test.ts',
    'webhooks/delivery-store-subscriptions.test.ts',
    'webhooks/delivery-store-claims.test.ts',
    'webhooks/delivery-store-attempts.test.ts',
    'webhooks/delivery-store-retries.test.ts',
  ]
    .map((f) => readFileSync(fileURLToPath(new URL(`../../../test/${f}`, import.meta.url)), 'utf8'))
    .join('\n');
  const missing: string[] = [];
  for (const [file, port] of ports) {
    const methods = methodsOf(file, port);
    assert.ok(methods.length > 0, `no methods found in ${port}`);
    for (const m of methods) if (!new RegExp(`\\.${m}\\(`).test(suite)) missing.push(`${port}.${m}`);
  }
  assert.deepEqual(missing, [], 'port methods no contract test calls');
});
