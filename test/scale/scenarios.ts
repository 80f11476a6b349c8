// The scale-out scenarios, shared by test/scale/scale-out.test.ts (CI-sized) and scripts/scale-out.mjs (any
// size). Each drives a Deployment, asserts what a user of the service must see, and returns its numbers.
import assert from 'node:assert/strict';
import { openStore } from '../../src/storage/open-store.js';
import { cli, createTokenCli, deliveriesByPlant, plantIdOf, waitForDeliveries, type Deployment } from './deployment.js';
import { clientFor } from '../helpers/client.js';
import { subscribe } from '../helpers/webhooks.js';
import { describeLoad, eachLimited, emptyLoad, plantName, writeLoad, type WriteLoad } from './load.js';
import { startReceiver } from '../helpers/receiver.js';
import type { TestContext } from 'node:test';
import type { Scope } from './haproxy.js';
import { eventually, sleep, within } from '../helpers/sleep.js';
import { storedPlant } from '../helpers/stored-plant.js';

/** Every acknowledged plant can be read back through the load balancer, as it was sent. */
async function assertReadable(d: Deployment, ids: bigint[]): Promise<void> {
  const wrong: string[] = [];
  await eachLimited(ids, 16, async (id) => {
    const res = await fetch(`${d.lb.url}/plants/${id}`, { headers: { authorization: `Bearer ${d.token}` } });
    const text = await res.text();
    const same = res.status === 200 && plantIdOf(text) === id && (JSON.parse(text) as { name?: string }).name === plantName(id);
    if (!same) wrong.push(`${id}: ${res.status} ${text}`);
  });
  assert.deepEqual(wrong.slice(0, 10), [], `${wrong.length} acknowledged plants not readable through the load balancer`);
}

/** The plants table seen directly: how many rows, and which of `ids` are there. */
async function inDatabase(databaseUrl: string, ids: bigint[]): Promise<{ count: number; present: Set<bigint> }> {
  const { store } = await openStore(databaseUrl);
  try {
    const present = new Set<bigint>();
    for (const id of ids) if (await storedPlant(store, id)) present.add(id);
    return { count: await store.countPlants(), present };
  } finally {
    await store.close();
  }
}

export interface KillReport {
  load: string;
  acknowledged: number;
  /** Requests cut off by the kill (HAProxy's 502/503/504, or no answer): their plants may or may not exist. */
  inDoubt: number;
  storedInDoubt: number;
  /** Deliveries beyond the first per plant (at-least-once after the kill). */
  duplicates: number;
  /** From the end of the load until the last acknowledged plant's event had arrived. */
  deliveriesDoneMs: number;
}

/**
 * Writes through the load balancer from `clients` clients for `loadMs` (and at least a second after the kill),
 * SIGKILLs one instance once `minAcknowledged` writes were acknowledged, then checks that no acknowledged plant
 * is lost (read through the LB, counted in the database) and that every acknowledged plant's event reached the
 * receiver at least once.
 */
export async function killUnderLoad(
  d: Deployment,
  options: { clients: number; loadMs: number; firstId: bigint; deliveryWaitMs: number; minAcknowledged?: number },
): Promise<KillReport> {
  const victim = d.instances[1]!;
  const before = (await inDatabase(d.databaseUrl, [])).count;
  const t0 = Date.now();
  let killAt = Infinity;
  const live = emptyLoad();
  const until = () => Date.now() - t0 >= Math.max(options.loadMs, killAt + 1_000);
  const load = writeLoad({ port: d.lb.port, token: d.token, clients: options.clients, firstId: options.firstId, until, timeoutMs: 20_000, result: live });
  // Until enough writes were acknowledged to mean something (on a loaded machine that takes longer).
  await eventually(() => live.ok.size >= (options.minAcknowledged ?? 100), 'writes acknowledged', 15_000, 100).catch(() => {}); // the assertions below judge the load
  killAt = Date.now() - t0;
  victim.proc.kill('SIGKILL');
  assert.equal(await victim.exited, 'SIGKILL');
  const result = await load;
  const loadEnded = Date.now();

  // Only the kill may cost answers: HAProxy's 502/503/504 for requests the victim held, within a short window.
  const window = (at: number) => at >= killAt - 100 && at <= killAt + 3_000;
  const unexpected = result.others.filter((o) => !([502, 503, 504].includes(o.status) && window(o.at)));
  assert.deepEqual(unexpected.slice(0, 5), [], `answers other than 200 outside the kill: ${describeLoad(result)}`);
  const cut = result.failed.filter((f) => !window(f.at));
  assert.deepEqual(cut.slice(0, 5), [], `requests without an answer outside the kill: ${describeLoad(result)}`);
  assert.ok(result.ok.size >= 50, `too little load to mean anything: ${describeLoad(result)}`);
  const inDoubt = [...result.others.map((o) => o.id), ...result.failed.map((f) => f.id)];

  const acknowledged = [...result.ok.keys()];
  await assertReadable(d, acknowledged);
  const db = await inDatabase(d.databaseUrl, [...acknowledged, ...inDoubt]);
  const lost = acknowledged.filter((id) => !db.present.has(id));
  assert.deepEqual(lost.slice(0, 10), [], `${lost.length} acknowledged plants are not in the database`);
  const storedInDoubt = inDoubt.filter((id) => db.present.has(id)).length;
  // Nothing is there that no client sent: the acknowledged plants and some of those cut off by the kill.
  assert.equal(db.count - before, acknowledged.length + storedInDoubt);

  const missing = await waitForDeliveries(d.receiver, acknowledged, options.deliveryWaitMs);
  assert.deepEqual(missing.slice(0, 10), [], `${missing.length} acknowledged plants' events never reached the receiver`);
  const deliveriesDoneMs = Date.now() - loadEnded;
  assert.deepEqual(d.receiver.problems, []);
  const per = deliveriesByPlant(d.receiver);
  let duplicates = 0;
  for (const id of acknowledged) duplicates += (per.get(id) ?? 1) - 1;
  return { load: describeLoad(result), acknowledged: acknowledged.length, inDoubt: inDoubt.length, storedInDoubt, duplicates, deliveriesDoneMs };
}

export interface SteadyReport {
  load: string;
  acknowledged: number;
  deliveriesDoneMs: number;
}

/**
 * Writes through the load balancer with every instance up: every request is answered 200, and each plant's
 * event reaches the subscriber exactly once although three dispatchers share the outbox.
 */
export async function exactlyOnce(d: Deployment, options: { clients: number; loadMs: number; firstId: bigint; deliveryWaitMs: number }): Promise<SteadyReport> {
  const t0 = Date.now();
  const result = await writeLoad({ port: d.lb.port, token: d.token, clients: options.clients, firstId: options.firstId, until: () => Date.now() - t0 >= options.loadMs, timeoutMs: 20_000 });
  const loadEnded = Date.now();
  assert.equal(result.others.length + result.failed.length, 0, `not every write was answered 200: ${describeLoad(result)}`);
  assert.ok(result.ok.size >= 50, `too little load to mean anything: ${describeLoad(result)}`);
  const acknowledged = [...result.ok.keys()];
  const missing = await waitForDeliveries(d.receiver, acknowledged, options.deliveryWaitMs);
  assert.deepEqual(missing.slice(0, 10), [], `${missing.length} events never reached the receiver`);
  const deliveriesDoneMs = Date.now() - loadEnded;
  // Real time, as a bound: a second delivery would come from another dispatcher claiming the same row.
  await sleep(2_000);
  assert.deepEqual(d.receiver.problems, []);
  const per = deliveriesByPlant(d.receiver);
  const twice = acknowledged.filter((id) => per.get(id) !== 1);
  assert.deepEqual(twice.slice(0, 10), [], `${twice.length} plants' events were not delivered exactly once`);
  assert.equal(d.receiver.requests.length, d.receiver.byId.size, 'some webhook-id arrived more than once');
  return { load: describeLoad(result), acknowledged: acknowledged.length, deliveriesDoneMs };
}

/** How long `check` took to come true (asked every 50 ms); rejects after `timeoutMs`. */
async function timeUntil(timeoutMs: number, what: string, check: () => Promise<boolean>): Promise<number> {
  const t0 = Date.now();
  await eventually(check, what, timeoutMs, 50);
  return Date.now() - t0;
}

/**
 * Waits until the outbox has nothing left to do: every event placed in the feed and fanned out to every active
 * subscription, and every delivery made. What was to be delivered has then reached its receiver.
 */
async function outboxDone(databaseUrl: string, timeoutMs: number): Promise<void> {
  const { store } = await openStore(databaseUrl);
  try {
    let left = { unplaced: 0, behind: 0, pending: 0 };
    const done = async () => {
      left = { ...(await store.events.backlog()), pending: await store.webhooks.countPendingDeliveries() };
      return left.unplaced === 0 && left.behind === 0 && left.pending === 0;
    };
    await eventually(done, () => `the outbox done (${JSON.stringify(left)})`, timeoutMs, 100);
  } finally {
    await store.close();
  }
}

/**
 * A token revoked with the CLI stops working on every instance within 5 s, although each instance had it
 * in its verification cache. Returns, per instance, how long after the revocation it first answered 401.
 */
export async function revocationReachesEveryInstance(d: Deployment): Promise<Record<string, number>> {
  const reader = await createTokenCli(d.env, 'plants:read', 'revoke-me');
  const get = (url: string) => fetch(`${url}/plants?limit=1`, { headers: { authorization: `Bearer ${reader.secret}` } });
  // Each instance verifies the token now and caches the verification.
  for (const i of d.instances) assert.equal((await get(i.url)).status, 200, `${i.name} accepts the new token`);
  await cli(d.env, ['token', 'revoke', reader.id]);
  const out: Record<string, number> = {};
  await Promise.all(
    d.instances.map(async (i) => {
      out[i.name] = await timeUntil(5_000, `revocation on ${i.name}`, async () => (await get(i.url)).status === 401);
    }),
  );
  return out;
}

/**
 * A subscription deleted through one instance stops receiving events made on every instance within 5 s.
 * Returns how long after the DELETE the last instance stopped showing it.
 */
export async function deletionReachesEveryInstance(scope: Scope, d: Deployment, firstId: bigint): Promise<{ goneAfterMs: number }> {
  const [a, b] = d.instances;
  let secret = '';
  const other = await startReceiver(scope as unknown as TestContext, () => secret);
  const sub = await subscribe(clientFor(a!.url, d.token), `${other.url}/other`);
  secret = sub.secret;
  const post = (url: string, id: bigint) =>
    fetch(`${url}/plants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${d.token}`, 'content-type': 'application/json' },
      body: `{"id":${id},"name":${JSON.stringify(plantName(id))}}`,
    });

  // Live on every instance: a plant made through each reaches the new subscriber.
  let id = firstId;
  const before: bigint[] = [];
  for (const i of d.instances) {
    assert.equal((await post(i.url, id)).status, 200);
    before.push(id++);
  }
  assert.deepEqual(await waitForDeliveries(other, before, 15_000), [], 'the new subscription gets events made on every instance');

  const del = await fetch(`${b!.url}/webhooks/${sub.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${d.token}` } });
  assert.equal(del.status, 204);
  const deletedAt = Date.now();
  let goneAfterMs = 0;
  for (const i of d.instances) {
    await timeUntil(5_000, `deleted subscription still listed on ${i.name}`, async () => {
      const res = await fetch(`${i.url}/webhooks/${sub.id}`, { headers: { authorization: `Bearer ${d.token}` } });
      await res.arrayBuffer();
      return res.status === 404;
    });
    goneAfterMs = Math.max(goneAfterMs, Date.now() - deletedAt);
  }
  // Plants made through every instance after the deletion reach the remaining subscriber only.
  const after: bigint[] = [];
  for (const i of d.instances) {
    assert.equal((await post(i.url, id)).status, 200);
    after.push(id++);
  }
  assert.deepEqual(await waitForDeliveries(d.receiver, after, 15_000), [], 'the remaining subscription still gets every event');
  // Whatever the outbox was to deliver of them, a delivery to the deleted subscription included, has arrived.
  await outboxDone(d.databaseUrl, 15_000);
  const leaked = after.filter((p) => deliveriesByPlant(other).has(p));
  assert.deepEqual(leaked, [], 'events made after the deletion reached the deleted subscription');
  assert.ok(goneAfterMs <= 5_000);
  return { goneAfterMs };
}

export interface DrainReport {
  load: string;
  acknowledged: number;
  /** From `state drain` until HAProxy had no session left on the instance. */
  drainedMs: number;
  /** From SIGTERM until the process exited. */
  exitMs: number;
}

/**
 * The rolling-restart recipe of docs/deployment.md under load: drain an instance at the load balancer, wait until it has
 * no sessions left, SIGTERM it. No client sees anything but 200, the instance exits 0, nothing is lost.
 */
export async function drainThenStop(d: Deployment, victimName: string, options: { clients: number; firstId: bigint }): Promise<DrainReport> {
  const victim = d.instances.find((i) => i.name === victimName)!;
  const before = (await inDatabase(d.databaseUrl, [])).count;
  let stop = false;
  const live = emptyLoad();
  const load = writeLoad({ port: d.lb.port, token: d.token, clients: options.clients, firstId: options.firstId, until: () => stop, timeoutMs: 20_000, result: live });
  const acknowledgedAtLeast = (n: number, what: string) => eventually(() => live.ok.size >= n, () => `${what}: ${describeLoad(live)}`, 15_000, 20);
  await acknowledgedAtLeast(100, 'writes acknowledged before the drain');
  const drainAt = Date.now();
  assert.equal((await d.lb.command(`set server plant_store/${victimName} state drain`)).trim(), '');
  await timeUntil(15_000, `sessions on ${victimName} after drain`, async () => (await d.lb.sessions()).get(victimName) === 0);
  const drainedMs = Date.now() - drainAt;
  const termAt = Date.now();
  victim.proc.kill('SIGTERM');
  const code = await within(victim.exited, 20_000, 'still running');
  const exitMs = Date.now() - termAt;
  assert.equal(code, 0, `exit after SIGTERM: ${code}\n${victim.stderr()}`);
  await acknowledgedAtLeast(live.ok.size + 100, 'writes acknowledged after the stop');
  stop = true;
  const result = await load;
  assert.equal(result.others.length + result.failed.length, 0, `not every write was answered 200: ${describeLoad(result)}`);
  const acknowledged = [...result.ok.keys()];
  await assertReadable(d, acknowledged);
  const db = await inDatabase(d.databaseUrl, acknowledged);
  assert.equal(db.present.size, acknowledged.length, 'acknowledged plants missing from the database');
  assert.equal(db.count - before, acknowledged.length);
  return { load: describeLoad(result), acknowledged: acknowledged.length, drainedMs, exitMs };
}
