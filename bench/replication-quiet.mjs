// npm run replication-quiet: the idle-then-lose run in real time, as the finding was reproduced. serve with
// WORKERS=2 and a file:// replica idles QUIET_SECONDS (100), then POSTs for WRITE_SECONDS (25) from 8 clients;
// then the machine is lost (kill -9 of serve's and Litestream's process groups, the data folder deleted), the
// store comes back with `restore --from-replica` and `export`, and every write acknowledged at least
// REPLICA_SYNC_INTERVAL + 1 s before the loss must be in it. Prints the lag and restarts /metrics showed after
// the quiet spell, and the writes lost by how long before the loss they were acknowledged.
// The test with a moved clock is test/ops/replication-quiet.test.ts; this is its real-time variant.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const QUIET_S = Number(process.env.QUIET_SECONDS ?? 100);
const WRITE_S = Number(process.env.WRITE_SECONDS ?? 25);
const SYNC_S = 1;
const BIN = new URL('../bin/plant-store.js', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'bench-quiet-'));
const env = {
  ...process.env,
  DATABASE_URL: `sqlite:${join(dir, 'data', 'plant-store.db')}`,
  REPLICA_URL: `file://${join(dir, 'replica')}`,
  REPLICA_SYNC_INTERVAL: `${SYNC_S}s`,
  WORKERS: '2',
  PORT: '0',
  HOST: '127.0.0.1',
  LOG_LEVEL: 'info',
  BOOTSTRAP_TOKEN: 'false',
};
const cli = (args) => execFileSync(process.execPath, [BIN, ...args], { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 1 << 28 });
const log = (line) => console.log(`# ${line}`);

cli(['migrate']);
const token = cli(['token', 'create', '--scopes', 'plants:read,plants:write,metrics:read', '--name', 'bench']).trim().split('\n').pop();
const serve = spawn(process.execPath, [BIN, 'serve'], { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
let out = '';
serve.stdout.on('data', (d) => (out += d));
serve.stderr.on('data', (d) => (out += d));
const LISTENING = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/;
while (!LISTENING.test(out)) await new Promise((r) => setTimeout(r, 100));
const url = LISTENING.exec(out)[1];
const metric = async (re) => {
  const text = await (await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${token}` } })).text();
  return Number(re.exec(text)?.[1] ?? NaN);
};

log(`serve at ${url}, idle for ${QUIET_S} s`);
await new Promise((r) => setTimeout(r, QUIET_S * 1000));
const lagAfterQuiet = await metric(/^plant_store_replication_lag_seconds\{replica="file"\} (\S+)$/m);
const restartsAfterQuiet = await metric(/^plant_store_replication_restarts_total (\S+)$/m);
log(`after the quiet spell: lag ${lagAfterQuiet} s, Litestream restarts ${restartsAfterQuiet}, "restarting Litestream" lines ${(out.match(/restarting Litestream/g) ?? []).length}`);

const acknowledged = new Map();
let next = 1;
const t0 = Date.now();
await Promise.all(
  Array.from({ length: 8 }, async () => {
    while (Date.now() - t0 < WRITE_S * 1000) {
      const id = next++;
      const res = await fetch(`${url}/plants`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ id, name: `p${id}` }) });
      await res.arrayBuffer();
      if (res.status === 200) acknowledged.set(id, Date.now());
      await new Promise((r) => setTimeout(r, 20));
    }
  }),
);
const lostAt = Date.now();
const litestream = [...out.matchAll(/"pid":(\d+),"msg":"replicating the store with Litestream"/g)].map((m) => Number(m[1]));
for (const pid of [serve.pid, ...litestream]) {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // gone already
  }
}
rmSync(join(dir, 'data'), { recursive: true, force: true });
cli(['restore', '--from-replica']);
const exported = cli(['export']).trim().split('\n').filter(Boolean).map((l) => JSON.parse(l).id);
const held = new Set(exported.map(Number));
const owed = [...acknowledged].filter(([, at]) => at <= lostAt - (SYNC_S + 1) * 1000);
const lost = owed.filter(([id]) => !held.has(id)).map(([, at]) => (lostAt - at) / 1000);
log(`${acknowledged.size} writes acknowledged in ${WRITE_S} s; ${owed.length} at least ${SYNC_S + 1} s before the loss; lost of those: ${lost.length}${lost.length ? ` (acknowledged ${Math.min(...lost).toFixed(1)}-${Math.max(...lost).toFixed(1)} s before)` : ''}`);
log(`all lost, whenever acknowledged: ${[...acknowledged.keys()].filter((id) => !held.has(id)).length}`);
rmSync(dir, { recursive: true, force: true });
process.exit(lost.length === 0 && lagAfterQuiet === 0 && restartsAfterQuiet === 0 ? 0 : 1);
