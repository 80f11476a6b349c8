#!/usr/bin/env node
// Scale-out by hand, with bigger numbers than CI: a private PostgreSQL cluster, `plant-store migrate`, N
// instances behind HAProxy, a webhook receiver; then the same scenarios as test/scale/scale-out.test.ts.
// Needs `npm run build` first, haproxy and the PostgreSQL server binaries (apt-get install -y haproxy postgresql).
//
//   node scripts/scale-out.mjs [--instances 3] [--clients 100] [--seconds 20] [--phase kill|steady|all]
//                              [--database-url postgres://...]   (an existing, migratable database instead)
//
// Prints one JSON report per phase; exits 1 when a check fails.
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';

const dist = (p) => fileURLToPath(new URL(`../dist/test/${p}`, import.meta.url));
const { values } = parseArgs({
  options: {
    instances: { type: 'string', default: '3' },
    clients: { type: 'string', default: '100' },
    seconds: { type: 'string', default: '20' },
    phase: { type: 'string', default: 'all' },
    'database-url': { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
});
if (values.help) {
  process.stdout.write('node scripts/scale-out.mjs [--instances N] [--clients N] [--seconds S] [--phase kill|steady|all] [--database-url URL]\n');
  process.exit(0);
}
const instances = Number(values.instances);
const clients = Number(values.clients);
const loadMs = Number(values.seconds) * 1000;
if (!(instances >= 2 && clients >= 1 && loadMs >= 1000) || !['kill', 'steady', 'all'].includes(values.phase)) {
  process.stderr.write('need --instances >= 2, --clients >= 1, --seconds >= 1, --phase kill|steady|all\n');
  process.exit(2);
}

const { deploy } = await import(dist('scale/deployment.js'));
const { haproxyAvailable } = await import(dist('scale/haproxy.js'));
const scenarios = await import(dist('scale/scenarios.js'));
const { startPgCluster } = await import(dist('helpers/pg-cluster.js'));

if (!haproxyAvailable()) {
  process.stderr.write('haproxy is not installed (apt-get install -y haproxy)\n');
  process.exit(2);
}

/** What the tests get from node:test: cleanups run in reverse order when a phase ends. */
function scope() {
  const cleanups = [];
  return {
    after: (fn) => cleanups.push(fn),
    async close() {
      for (const fn of cleanups.reverse()) await fn();
    },
  };
}

const log = (o) => process.stdout.write(`${JSON.stringify(o)}\n`);
let failed = false;
// Ids above 2^53 (exactness must survive), new on every run so that a reused database has no clashes.
const firstId = 2n ** 60n + BigInt(Date.now()) * 1_000_000n;

async function phase(name, run) {
  const s = scope();
  const started = Date.now();
  try {
    let databaseUrl = values['database-url'];
    if (!databaseUrl) {
      const cluster = await startPgCluster();
      s.after(() => cluster.destroy());
      databaseUrl = cluster.url;
    }
    const d = await deploy(s, databaseUrl, { instances });
    log({ phase: name, instances, clients, loadMs, ...(await run(s, d)), seconds: (Date.now() - started) / 1000 });
  } catch (err) {
    failed = true;
    log({ phase: name, failed: String(err?.stack ?? err) });
  } finally {
    await s.close();
  }
}

const deliveryWaitMs = Math.max(60_000, loadMs * 5);
if (values.phase !== 'steady') {
  await phase('kill', (_s, d) => scenarios.killUnderLoad(d, { clients, loadMs, firstId, deliveryWaitMs }));
}
if (values.phase !== 'kill') {
  await phase('steady', async (s, d) => ({
    ...(await scenarios.exactlyOnce(d, { clients, loadMs, firstId: firstId + 300_000n, deliveryWaitMs })),
    revocationMs: await scenarios.revocationReachesEveryInstance(d),
    deletion: await scenarios.deletionReachesEveryInstance(s, d, firstId + 600_000n),
  }));
}
process.exit(failed ? 1 : 0);
