// Scale-out on PostgreSQL: three `plant-store serve` processes behind HAProxy share one database. Killing
// one mid-load loses no acknowledged plant and no event; with all of them up, each event is delivered exactly
// once; a revoked token and a deleted subscription take effect on every instance within 5 s; an instance
// drained at the load balancer, then sent SIGTERM, stops without a single failed request.
// PostgreSQL only (scripts/engine-only.mjs); needs haproxy (npm test installs it as root: scripts/preflight.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pgCluster } from '../helpers/pg-cluster.js';
import { deploy } from './deployment.js';
import { haproxyAvailable } from './haproxy.js';
import { deletionReachesEveryInstance, drainThenStop, exactlyOnce, killUnderLoad, revocationReachesEveryInstance } from './scenarios.js';

// Ids above 2^53, so that exactness is part of what must survive.
const FIRST_ID = 2n ** 60n;

test('SIGKILL of one of three instances behind HAProxy under 20 writers loses no acknowledged plant or event; a drained one stops without a failed request', { timeout: 180_000 }, async (t) => {
  assert.ok(haproxyAvailable(), 'haproxy is not installed (apt-get install -y haproxy)');
  const cluster = await pgCluster(t);
  const d = await deploy(t, cluster.url, { instances: 3 });
  const report = await killUnderLoad(d, { clients: 20, loadMs: 3_000, firstId: FIRST_ID, deliveryWaitMs: 60_000 });
  t.diagnostic(JSON.stringify(report));
  // HAProxy takes the dead instance out after two failed /readyz checks.
  await d.lb.waitFor({ s1: 'UP', s2: 'DOWN', s3: 'UP' });

  // A planned stop of another one, drained first, costs no client a single non-200.
  const drained = await drainThenStop(d, 's3', { clients: 20, firstId: FIRST_ID + 10_000_000n });
  t.diagnostic(JSON.stringify(drained));
});

test('three instances: each event exactly once; revocation and subscription deletion reach every instance within 5 s', { timeout: 180_000 }, async (t) => {
  assert.ok(haproxyAvailable(), 'haproxy is not installed (apt-get install -y haproxy)');
  const cluster = await pgCluster(t);
  const d = await deploy(t, cluster.url, { instances: 3 });
  const steady = await exactlyOnce(d, { clients: 20, loadMs: 2_000, firstId: FIRST_ID, deliveryWaitMs: 60_000 });
  t.diagnostic(JSON.stringify(steady));
  const revoked = await revocationReachesEveryInstance(d);
  t.diagnostic(`revocation took effect after (ms): ${JSON.stringify(revoked)}`);
  const deleted = await deletionReachesEveryInstance(t, d, FIRST_ID + 10_000_000n);
  t.diagnostic(`deleted subscription gone everywhere after ${deleted.goneAfterMs} ms`);
});
