// PostgreSQL goes away under load (pg_ctl stop -m immediate, as in a crash) and comes back: meanwhile every
// write is answered promptly with a 503 Error carrying Retry-After (never a 500, never a hang), /readyz says
// 503, so do reads; after the restart the same process serves again within seconds, every acknowledged plant
// is there and its webhook event is delivered. HAProxy in front takes the instance out of rotation and back.
// PostgreSQL only (scripts/engine-only.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../../src/storage/open-store.js';
import { pgCluster } from '../helpers/pg-cluster.js';
import type { TestContext } from 'node:test';
import { startReceiver } from '../helpers/receiver.js';
import { cli, createTokenCli, instanceEnv, startInstance, waitForDeliveries } from './deployment.js';
import { clientFor } from '../helpers/client.js';
import { subscribe } from '../helpers/webhooks.js';
import { haproxyAvailable, startHaproxy } from './haproxy.js';
import { describeLoad, emptyLoad, writeLoad } from './load.js';
import { eventually, sleep } from '../helpers/sleep.js';
import { storedPlant } from '../helpers/stored-plant.js';

const CLIENTS = 10;
/** A request taking longer than this counts as a hang (the store's connect and statement timeouts are 5 s and 10 s). */
const DEADLINE_MS = 15_000;
const DOWN_MS = 3_000;
const RECOVERY_MS = 10_000;

test('PostgreSQL stopped under load: 503 with Retry-After, /readyz 503; restarted: the service recovers by itself, no acknowledged plant lost', { timeout: 180_000 }, async (t) => {
  const cluster = await pgCluster(t);
  const env = instanceEnv(cluster.url);
  await cli(env, ['migrate']);
  const { secret: token } = await createTokenCli(env, 'plants:read,plants:write,webhooks:manage', 'outage');
  const server = await startInstance(t, env, 's1');
  // HAProxy in front as well (the load goes to the instance directly): when its only instance is not ready
  // it answers in the same Error shape, with Retry-After.
  assert.ok(haproxyAvailable(), 'haproxy is not installed (apt-get install -y haproxy)');
  const lb = await startHaproxy(t, [{ name: 's1', port: server.port }]);
  await lb.waitFor({ s1: 'UP' });
  let secret = '';
  const receiver = await startReceiver(t as TestContext, () => secret);
  secret = (await subscribe(clientFor(server.url, token), `${receiver.url}/outage`)).secret;

  const t0 = Date.now();
  const since = () => Date.now() - t0;
  let stop = false;
  // A failed assertion must not leave the writers running (the file would never exit).
  t.after(() => {
    stop = true;
  });
  const live = emptyLoad();
  const load = writeLoad({ port: server.port, token, clients: CLIENTS, firstId: 2n ** 60n, until: () => stop, timeoutMs: DEADLINE_MS, result: live, pauseMs: 50 });
  await eventually(() => live.ok.size >= 100, 'writes acknowledged', 15_000, 100).catch(() => {}); // the assertions below judge the load

  const stoppingAt = since();
  await cluster.kill();
  const downAt = since();

  // While it is down, readiness says so, every time it is asked.
  // So do reads (after the token cache's 2 s, token checks need the store too).
  const whileDown: { path: string; status: number; retryAfter: string | null; body: string }[] = [];
  const auth = { authorization: `Bearer ${token}` };
  while (since() - downAt < DOWN_MS) {
    for (const [path, headers] of [['/readyz', {}], ['/plants?limit=5', auth], ['/plants/1', auth], ['/webhooks', auth]] as const) {
      const res = await fetch(`${server.url}${path}`, { headers });
      whileDown.push({ path, status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.text() });
    }
    const viaLb = await fetch(`${lb.url}/plants/1`, { headers: auth });
    whileDown.push({ path: 'LB /plants/1', status: viaLb.status, retryAfter: viaLb.headers.get('retry-after'), body: await viaLb.text() });
    // Real time: the outage lasts DOWN_MS, past the token cache, and is probed every 200 ms meanwhile.
    await sleep(200);
  }
  // Two failed /readyz checks took the instance out of HAProxy's rotation.
  await lb.waitFor({ s1: 'DOWN' }, 5_000);
  const lbAlone = await fetch(`${lb.url}/plants/1`, { headers: auth });
  whileDown.push({ path: 'LB /plants/1', status: lbAlone.status, retryAfter: lbAlone.headers.get('retry-after'), body: await lbAlone.text() });
  const restartingAt = since();
  await cluster.start();
  const upAt = since();

  // The same process (no restart) is ready and accepts writes again within RECOVERY_MS.
  let readyAfterMs = -1;
  const ready = async () => {
    const res = await fetch(`${server.url}/readyz`);
    await res.arrayBuffer();
    return res.status === 200;
  };
  await eventually(ready, '/readyz 200', RECOVERY_MS - (since() - upAt), 100).then(() => (readyAfterMs = since() - upAt), () => {}); // asserted below
  const okSinceStart = () => [...live.ok.values()].filter((at) => at > upAt);
  await eventually(() => okSinceStart().length > 0, 'a write acknowledged', RECOVERY_MS - (since() - upAt), 100).catch(() => {}); // asserted below
  const writesAfterMs = okSinceStart().length > 0 ? Math.min(...okSinceStart()) - upAt : -1;
  await lb.waitFor({ s1: 'UP' }, RECOVERY_MS);
  const lbWrite = await fetch(`${lb.url}/plants`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: '{"id":42,"name":"through the load balancer"}',
  });
  assert.equal(lbWrite.status, 200, 'HAProxy routes to the instance again');
  const servedAgain = live.ok.size;
  await eventually(() => live.ok.size >= servedAgain + 100, () => `writes acknowledged after the recovery: ${describeLoad(live)}`, RECOVERY_MS, 20);
  stop = true;
  const result = await load;
  t.diagnostic(describeLoad(result));
  t.diagnostic(`stop took ${downAt - stoppingAt} ms, down for ${restartingAt - downAt} ms, start took ${upAt - restartingAt} ms; ready ${readyAfterMs} ms and first write ${writesAfterMs} ms after the start`);

  assert.equal(server.proc.exitCode, null, 'the service kept running through the outage');
  assert.ok(whileDown.length >= 20);
  for (const r of whileDown) {
    assert.equal(r.status, 503, `${r.path} while PostgreSQL is down: ${r.status} ${r.body}`);
    assert.equal(r.retryAfter, '1', `${r.path}: Retry-After`);
    assert.deepEqual(Object.keys(JSON.parse(r.body)).sort(), ['error', 'message']);
  }
  assert.ok(whileDown.some((r) => r.path.startsWith('LB') && /No instance is ready/.test(r.body)), 'HAProxy answered itself once the instance was out');
  assert.ok(readyAfterMs >= 0, `/readyz not 200 within ${RECOVERY_MS} ms of the restart`);
  assert.ok(writesAfterMs >= 0, `no write acknowledged within ${RECOVERY_MS} ms of the restart: ${describeLoad(result)}`);

  // Every answer was a 200 or a 503 Error with Retry-After; nothing hung, no connection was dropped.
  assert.deepEqual(result.failed.slice(0, 5), [], `requests without an answer: ${describeLoad(result)}`);
  assert.ok(result.maxMs < DEADLINE_MS, `slowest request ${result.maxMs} ms`);
  const wrong = result.others.filter((o) => {
    if (o.status !== 503 || o.retryAfter !== '1' || !o.contentType?.startsWith('application/json')) return true;
    const body = JSON.parse(o.body) as Record<string, unknown>;
    return body.error !== 503 || typeof body.message !== 'string' || Object.keys(body).length !== 2;
  });
  assert.deepEqual(wrong.slice(0, 5), [], `answers other than 200 or a 503 Error with Retry-After: ${describeLoad(result)}`);
  assert.ok(result.others.length > 0, `the outage was not noticed: ${describeLoad(result)}`);
  // 503s only while PostgreSQL was away: from the stop until shortly after it was back.
  const outside = result.others.filter((o) => o.at < stoppingAt || o.at > upAt + writesAfterMs + 2_000);
  assert.deepEqual(outside.slice(0, 5), [], '503 outside the outage');

  const acknowledged = [...result.ok.keys()];
  const refused = result.others.map((o) => o.id);
  const { store } = await openStore(cluster.url);
  try {
    const lost: bigint[] = [];
    for (const id of acknowledged) if (!(await storedPlant(store, id))) lost.push(id);
    assert.deepEqual(lost.slice(0, 10), [], `${lost.length} acknowledged plants lost`);
    let storedRefused = 0;
    for (const id of refused) if (await storedPlant(store, id)) storedRefused++;
    t.diagnostic(`acknowledged=${acknowledged.length} all present; refused with 503=${refused.length}, of which stored=${storedRefused}`);
    assert.equal(await store.countPlants(), acknowledged.length + storedRefused + 1);
  } finally {
    await store.close();
  }

  // The outbox survived too: every acknowledged plant's event reaches the subscriber after the outage.
  const missing = await waitForDeliveries(receiver, acknowledged, 60_000);
  assert.deepEqual(missing.slice(0, 10), [], `${missing.length} events never delivered`);
  assert.deepEqual(receiver.problems, []);
});
