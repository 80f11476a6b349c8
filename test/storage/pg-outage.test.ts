// PostgreSQL outages as a user sees them: unreachable at start -> a one-line message and a non-zero exit,
// quickly; stopped while serving -> 503 and /readyz 503, then recovery without a restart and no acknowledged
// plant lost. Uses a private cluster (never the suite's shared one) where it stops the server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { errorOf, runCli, spawnServer } from '../helpers/app.js';
import { pgCluster } from '../helpers/pg-cluster.js';
import { freePort } from '../helpers/ports.js';
import { createToken } from '../helpers/cli.js';
import { eventually } from '../helpers/sleep.js';

test('postgres unreachable at start: migrate and serve exit 1 within the connect timeout, naming host:port, never the password', async (t) => {
  const port = await freePort();
  const env = { DATABASE_URL: `postgres://app:s3cret-pw@127.0.0.1:${port}/plants`, DATABASE_CONNECT_TIMEOUT_MS: '2000', PORT: '0' };
  for (const args of [['migrate'], ['serve'], ['token', 'list']]) {
    const started = Date.now();
    const r = await runCli(args, env);
    const took = Date.now() - started;
    assert.equal(r.code, 1, `${args.join(' ')}: ${r.stdout}${r.stderr}`);
    assert.ok(took < 8_000, `${args.join(' ')} took ${took} ms`);
    // One line saying what failed, after (for the CLI's commands) the one naming the database it uses.
    const lines = r.stderr.trim().split('\n');
    if (lines.length === 2) assert.equal(lines[0], `plant-store: Using the PostgreSQL database 127.0.0.1:${port}/plants.`);
    assert.ok(lines.length <= 2, r.stderr);
    assert.match(lines.at(-1)!, new RegExp(`^plant-store: cannot connect to PostgreSQL at 127\\.0\\.0\\.1:${port}/plants: .*ECONNREFUSED`, 'i'));
    assert.doesNotMatch(r.stdout + r.stderr, /s3cret-pw/);
  }
  // A server that does not answer the handshake at all: the connect timeout bounds the wait.
  const silent = createServer(() => {}).listen(0, '127.0.0.1');
  t.after(() => silent.close());
  await new Promise((r) => silent.once('listening', r));
  const silentPort = (silent.address() as { port: number }).port;
  const started = Date.now();
  const r = await runCli(['migrate'], { ...env, DATABASE_URL: `postgresql://app:s3cret-pw@127.0.0.1:${silentPort}/plants`, DATABASE_CONNECT_TIMEOUT_MS: '1000' });
  assert.equal(r.code, 1);
  assert.ok(Date.now() - started < 8_000, `took ${Date.now() - started} ms`);
  assert.match(r.stderr, new RegExp(`cannot connect to PostgreSQL at 127\\.0\\.0\\.1:${silentPort}/plants: .*timeout`, 'i'));
  assert.doesNotMatch(r.stderr, /s3cret-pw/);
});

test('postgres stopped while serving: 503 and /readyz 503, no 500; back by itself after the restart, no acknowledged plant lost', async (t) => {
  const cluster = await pgCluster(t);
  const token = await createToken(cluster.url);
  const server = await spawnServer(t, {
    DATABASE_URL: cluster.url, BOOTSTRAP_TOKEN: 'false', DATABASE_CONNECT_TIMEOUT_MS: '1000', DATABASE_STATEMENT_TIMEOUT_MS: '2000',
  });
  const post = (id: number) =>
    fetch(`${server.url}/plants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ id, name: `p${id}` }),
    });
  const acknowledged: number[] = [];
  const statuses = new Map<number, number>();
  let next = 1;
  let running = true;
  // Four clients writing all along: before, during and after the outage (bounded by the phases below). A client
  // refused with 503 tries again 20 ms later, until a create is acknowledged.
  const create = async () => {
    if (!running) return true;
    const id = next++;
    const res = await post(id);
    statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
    if (res.status === 200) acknowledged.push(id);
    else {
      assert.equal(res.status, 503, `id ${id}`);
      await errorOf(res);
    }
    return res.status === 200;
  };
  const writers = Array.from({ length: 4 }, async () => {
    while (running) await eventually(create, 'a create acknowledged', 120_000, 20);
  });
  const readyz = async () => (await fetch(`${server.url}/readyz`)).status;

  try {
    await eventually(async () => acknowledged.length >= 50, 'writes before the outage', 15_000, 100);
    assert.equal(await readyz(), 200);
    await cluster.stop();
    await eventually(async () => (await readyz()) === 503, '/readyz 503 while down', 10_000, 100);
    const ackedBefore = acknowledged.length;
    await eventually(async () => (statuses.get(503) ?? 0) > 0, 'a 503 for a create while down', 10_000, 100);
    // Still down: every create fails, none is acknowledged, over the next twenty tries.
    const refusedSoFar = statuses.get(503)!;
    await eventually(() => statuses.get(503)! >= refusedSoFar + 20, 'twenty more creates refused while down', 10_000);
    const ackedWhileDown = acknowledged.length;
    assert.ok(ackedWhileDown - ackedBefore <= 4, 'acknowledged while the database was down');
    await cluster.start();
    await eventually(async () => (await readyz()) === 200, '/readyz 200 after the restart', 15_000, 100);
    await eventually(async () => acknowledged.length >= ackedWhileDown + 50, 'writes after the restart', 15_000, 100);
  } finally {
    running = false;
    await Promise.all(writers);
  }
  assert.deepEqual([...statuses.keys()].filter((s) => s !== 200 && s !== 503), [], `statuses: ${JSON.stringify([...statuses])}`);
  assert.equal(server.proc.exitCode, null, 'the server exited');

  // Every acknowledged plant is there, read through the API of the same, never restarted, server.
  const stored = new Set<string>();
  let after: string | undefined;
  for (;;) {
    const res = await fetch(`${server.url}/plants?limit=1000${after ? `&after=${after}` : ''}`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(res.status, 200);
    const page = JSON.parse(await res.text()) as { id: number }[];
    if (page.length === 0) break;
    for (const p of page) stored.add(String(p.id));
    after = String(page.at(-1)!.id);
  }
  const lost = acknowledged.filter((id) => !stored.has(String(id)));
  assert.deepEqual(lost, [], `${lost.length} of ${acknowledged.length} acknowledged plants lost`);
});
