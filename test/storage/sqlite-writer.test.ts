// A SQLite store whose writer is another process's (a cluster worker's: its primary writes for it) sends every
// write of every port there as a command, in the one codec, and its own connection writes nothing: it is
// query_only, and changes no row. Here the "primary" is a second store on the same file, on this thread.
// Whichever writer a store has (its role, sqlite-role.ts), it answers alike.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type Database from 'better-sqlite3';
import { createStore } from '../../src/storage/open-store.js';
import { StoreUnavailableError } from '../../src/errors/store-errors.js';
import type { SharedWriter, Store } from '../../src/storage/store.js';
import type { WebhookSubscription } from '../../src/webhooks/delivery.js';
import { freshDatabaseUrl } from '../helpers/test-store.js';
import { sequenced } from '../helpers/events.js';

async function linkedStores(t: Parameters<typeof freshDatabaseUrl>[0]) {
  const url = await freshDatabaseUrl(t);
  const primary = createStore(url, { commitOnThisThread: true });
  await primary.migrate();
  const sent: string[] = [];
  const link: SharedWriter = {
    async send(command) {
      sent.push(command.name);
      return (await primary.serveWrite!(command)).reply;
    },
    watch: () => () => {},
  };
  const worker = createStore(url, { sharedWriter: link });
  await worker.migrate();
  t.after(async () => {
    await worker.close();
    await primary.close();
  });
  return { primary, worker, sent };
}

/** The worker store's own connection (what this test is about: it must write nothing). */
function connectionOf(store: Store): Database.Database {
  return (store as unknown as { db: Database.Database }).db;
}

const subscription = (id: string, url: string): WebhookSubscription => ({
  id, url, description: null, events: ['newPlant'], format: 'plain', secret: 'whsec_' + 'A'.repeat(32), createdAt: new Date(), disabledAt: null, disabledReason: null,
});

test('every write of a store whose writer is elsewhere goes there as a command; its own connection is query_only and changes no row', async (t) => {
  const { primary, worker, sent } = await linkedStores(t);
  const expected: string[] = [];
  const step = async <T>(commands: string[], write: () => Promise<T>): Promise<T> => {
    const result = await write();
    expected.push(...commands);
    assert.deepEqual(sent, expected);
    return result;
  };
  assert.equal((await step(['plants'], () => worker.createPlant({ id: 1n, name: 'fern' }))).kind, 'created');
  await step(['plants'], () => worker.patchPlant(1n, { tag: 'green' }));
  await step(['plants'], () => worker.replacePlant({ id: 1n, name: 'fern', tag: 'blue' }));
  await step(['plants'], () => worker.importPlants([{ id: 2n, name: 'moss' }, { id: 3n, name: 'ivy' }]));
  await step(['plants'], () => worker.deletePlant(3n));
  assert.deepEqual(await worker.getPlant(1n), { id: 1n, name: 'fern', tag: 'blue', version: (await worker.getPlant(1n))!.version });
  assert.equal(await worker.countPlants(), 2);

  const token = { id: 'tok_1', name: 't', hash: 'h'.repeat(64), scopes: ['plants:read'], createdAt: new Date(1_000), lastUsedAt: null, expiresAt: null, revokedAt: null };
  await step(['insertToken'], () => worker.insertToken(token));
  await step(['touchTokens'], () => worker.touchTokens(new Map([['tok_1', new Date(5_000)]])));
  assert.equal(await step(['revokeToken'], () => worker.revokeToken('tok_1', new Date(6_000))), true);
  assert.deepEqual((await worker.findTokenByHash(token.hash))?.lastUsedAt, new Date(5_000));

  const hooks = worker.webhooks;
  assert.equal(await step(['insertSubscription'], () => hooks.insertSubscription(subscription('wh_1', 'http://127.0.0.1:9/a'), () => undefined)), undefined);
  assert.equal(await step(['replaceSecret'], () => hooks.replaceSecret('wh_1', 'whsec_' + 'A'.repeat(32), 'whsec_' + 'B'.repeat(32))), true);
  await step(['plants'], () => worker.createPlant({ id: 4n, name: 'sage' }));
  // The primary's sequencer makes the delivery; the worker's dispatcher (were it there) claims it.
  await sequenced(primary);
  const [claimed] = await step(['claim'], () => hooks.claimDueDeliveries({ now: new Date(Date.now() + 1_000), leaseUntil: new Date(Date.now() + 60_000), limit: 10, perSubscription: 10, skipSubscriptions: [] }));
  // The claimed delivery carries the secret as stored, across the codec.
  assert.equal(claimed?.secret, 'whsec_' + 'B'.repeat(32));
  await step(['recordAttempts'], () => hooks.recordAttempt(claimed!.deliveryId, { at: new Date(), statusCode: 500, error: null, durationMs: 3 }, { status: 'failed' }));
  assert.equal(await step(['retryDelivery'], () => hooks.retryDelivery('wh_1', claimed!.deliveryId, new Date())), true);
  assert.deepEqual(
    await step(['requeueDeliveries'], () => hooks.requeueDeliveries({ subscriptionId: 'wh_1', statuses: ['failed'], createdSince: new Date(0), limit: 10, dueAt: new Date() })),
    { queued: 0, more: false },
  );
  assert.equal(await step(['enableSubscription'], () => hooks.enableSubscription('wh_1')), false);
  assert.equal(await step(['deleteSubscription'], () => hooks.deleteSubscription('wh_1')), true);
  await step(['recordRestore'], () => worker.restores.record({ restoredAt: new Date(), newestEventAt: null, versionsFrom: 10n ** 15n }));
  assert.equal((await worker.restores.facts()).lastVersion, 10n ** 15n);

  const db = connectionOf(worker);
  assert.equal(db.pragma('query_only', { simple: true }), 1);
  assert.equal(db.prepare('SELECT total_changes()').pluck().get(), 0, 'the worker\'s own connection changed rows');
});

test('a subscription rule that another process\'s create overtook looks again, and sees that subscription', async (t) => {
  const { primary, worker } = await linkedStores(t);
  const seen: string[][] = [];
  const refusal = await worker.webhooks.insertSubscription(subscription('wh_mine', 'http://127.0.0.1:9/mine'), (existing) => {
    seen.push(existing.map((s) => s.id));
    // Between this look and the insert, another worker's create commits.
    if (seen.length === 1) void primary.webhooks.insertSubscription(subscription('wh_other', 'http://127.0.0.1:9/other'), () => undefined);
    return undefined;
  });
  assert.equal(refusal, undefined);
  assert.deepEqual(seen, [[], ['wh_other']]);
  assert.deepEqual((await worker.webhooks.listSubscriptions()).map((s) => s.id).sort(), ['wh_mine', 'wh_other']);
});

/** Runs `sql` on the store's file through its own connection, which may be query_only. */
function onFile(store: Store, sql: string): void {
  const db = connectionOf(store);
  const readOnly = db.pragma('query_only', { simple: true }) === 1;
  db.pragma('query_only = OFF');
  db.exec(sql);
  if (readOnly) db.pragma('query_only = ON');
}

/** The same writes on a store: what each was answered, and how a failed commit fails. */
async function answers(store: Store) {
  // One turn: one batch, creates first, then the others in order.
  const first = await Promise.all<unknown>([
    store.createPlant({ id: 1n, name: 'fern' }),
    store.createPlant({ id: 1n, name: 'fern' }),
    store.createPlant({ id: 1n, name: 'moss' }),
    store.createPlant({ id: 2n, name: 'ivy', tag: 'x' }),
    store.deletePlant(3n),
    store.patchPlant(2n, { tag: null }),
    store.replacePlant({ id: 2n, name: 'ivy' }, 999n),
  ]);
  const second = await Promise.all<unknown>([
    store.patchPlant(1n, { name: 'x'.repeat(10_000) }),
    store.patchPlant(1n, { name: 'fern' }),
    store.replacePlant({ id: 1n, name: 'fern', tag: 'green' }),
    store.deletePlant(2n, 1n),
  ]);
  const imported = await store.importPlants([{ id: 3n, name: 'moss' }, { id: 1n, name: 'fern', tag: 'green' }]);
  // A batch that fails in the writer: its versions cannot be taken.
  onFile(store, 'DELETE FROM plant_version_counter');
  const failed = await store.createPlant({ id: 4n, name: 'sage' }).then(
    () => 'committed',
    (err: unknown) => ({ unavailable: err instanceof StoreUnavailableError, message: ((err as Error).cause as Error).message, code: ((err as Error).cause as { code?: string }).code }),
  );
  return { first, second, imported, failed };
}

test('every role answers plant writes alike: the writer on this thread (no codec), the write worker, and the primary for its worker', async (t) => {
  const alone = createStore('sqlite::memory:');
  const primary = createStore(await freshDatabaseUrl(t), { commitOnThisThread: true });
  const withWorker = createStore(await freshDatabaseUrl(t));
  const { worker: follower } = await linkedStores(t);
  t.after(async () => {
    for (const store of [alone, primary, withWorker]) await store.close();
  });
  for (const store of [alone, primary, withWorker]) await store.migrate();
  const expected = await answers(alone);
  assert.equal((expected.first[2] as { kind: string }).kind, 'conflict');
  assert.equal((expected.second[0] as { kind: string }).kind, 'too-long');
  assert.equal((expected.failed as { unavailable: boolean }).unavailable, true);
  for (const [role, store] of [['primary', primary], ['write worker', withWorker], ['follower', follower]] as const) {
    assert.deepStrictEqual(await answers(store), expected, role);
  }
});
