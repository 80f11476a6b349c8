// `plant-store serve` with several worker processes (WORKERS): acknowledged writes survive kill -9 of a worker
// and of the primary, a dead worker is replaced, SIGTERM drains every worker, each event is delivered once,
// a revocation reaches every worker within 5 s, GET /metrics answers for the whole server, and with every
// worker killed again and again a new one serves within 3 s each time.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { availableParallelism } from 'node:os';
import { runCli, spawnServer, TEST_STORE, type ChildServer } from '../helpers/app.js';
import { openStore } from '../../src/storage/open-store.js';
import { sleep, eventually } from '../helpers/sleep.js';
import { addSubscription } from '../helpers/webhooks.js';
import { startReceiver } from '../helpers/receiver.js';
import { assertAcknowledgedStored, runLoad, summarize, type LoadResult } from '../helpers/load.js';
import { databaseWithToken, portOf } from '../helpers/cli.js';
import { fresh } from '../helpers/raw-request.js';
import { alive } from '../helpers/ports.js';

const WORKERS = 2;

async function serveWorkers(t: TestContext, env: Record<string, string> = {}) {
  const { databaseUrl, token } = await databaseWithToken(t);
  const server = await spawnServer(t, { DATABASE_URL: databaseUrl, BOOTSTRAP_TOKEN: 'false', WORKERS: String(WORKERS), ...env });
  // Every worker listening: the primary announces the server only then.
  await eventually(() => server.stdout().includes('plant-store is listening'), 'the primary announcing the server', 20_000);
  t.after(() => {
    for (const pid of workerPids(server)) if (alive(pid)) process.kill(pid, 'SIGKILL');
  });
  return { databaseUrl, token, server, port: portOf(server.url) };
}

/** The pids of every worker the primary started, in order (its "worker started" lines). */
function workerPids(server: ChildServer): number[] {
  return server
    .stdout()
    .split('\n')
    .filter((l) => l.includes('"worker started"'))
    .map((l) => (JSON.parse(l) as { pid: number }).pid);
}

test('kill -9 of a worker, then of the primary, under 20 writers: a new worker takes over, and every acknowledged plant is stored', async (t) => {
  const { databaseUrl, token, server, port } = await serveWorkers(t);
  const [first] = workerPids(server);
  let primaryKilled = false;
  const live: LoadResult = { ok: new Map(), statuses: new Map(), errors: new Map(), sent: 0 };
  const load = runLoad({ port, token, clients: 20, firstId: 2n ** 60n, until: () => false, stopOnError: () => primaryKilled, result: live });
  await eventually(() => live.ok.size >= 100, 'writes acknowledged before the first kill', 20_000);
  process.kill(first!, 'SIGKILL');
  await eventually(() => workerPids(server).length === WORKERS + 1, 'a replacement worker', 20_000);
  const afterWorkerKill = live.ok.size;
  await eventually(() => live.ok.size >= afterWorkerKill + 100, 'writes acknowledged after the worker was replaced', 20_000);
  const statusesBefore = [...live.statuses.keys()];

  primaryKilled = true;
  server.proc.kill('SIGKILL');
  assert.equal(await server.exited, 'SIGKILL');
  const result = await load;
  t.diagnostic(summarize(result));
  // Node's cluster ends the workers when their primary is gone: none keeps the port.
  await eventually(() => workerPids(server).every((pid) => !alive(pid)), 'every worker gone after the primary', 10_000);
  assert.deepEqual(statusesBefore, [], `answers other than 200 before the primary was killed: ${summarize(result)}`);
  t.diagnostic(await assertAcknowledgedStored(databaseUrl, result));

  // It starts again on what the kills left.
  const again = await spawnServer(t, { DATABASE_URL: databaseUrl, BOOTSTRAP_TOKEN: 'false', WORKERS: String(WORKERS) });
  const someId = [...result.ok.keys()].at(-1)!;
  const read = await fresh(portOf(again.url), `/plants/${someId}`, token);
  assert.equal(read.status, 200, read.body);
  again.proc.kill('SIGTERM');
  assert.equal(await again.exited, 0);
});

test('SIGTERM to the primary under 20 writers: every worker drains (200 or 503 only), exit 0, every 200 stored, no worker left', async (t) => {
  const { databaseUrl, token, server, port } = await serveWorkers(t, { SHUTDOWN_TIMEOUT_MS: '5000' });
  let signalled = false;
  const live: LoadResult = { ok: new Map(), statuses: new Map(), errors: new Map(), sent: 0 };
  const load = runLoad({ port, token, clients: 20, firstId: 1n, until: () => false, stopOnError: () => signalled, result: live });
  await eventually(() => live.ok.size >= 150, 'writes acknowledged before the signal', 20_000);
  signalled = true;
  server.proc.kill('SIGTERM');
  assert.equal(await server.exited, 0, server.stderr());
  const result = await load;
  t.diagnostic(summarize(result));
  assert.deepEqual([...result.statuses.keys()].filter((s) => s !== 503), [], summarize(result));
  assert.ok(workerPids(server).every((pid) => !alive(pid)), 'a worker outlived the primary');
  assert.match(server.stdout(), /"role":"primary"[^\n]*"msg":"stopped"/);
  t.diagnostic(await assertAcknowledgedStored(databaseUrl, result));
});

test('each event is delivered once, and the feed holds each once, with writes arriving through every worker', async (t) => {
  const { databaseUrl, token } = await databaseWithToken(t);
  const { store } = await openStore(databaseUrl);
  let secret = '';
  const receiver = await startReceiver(t, () => secret);
  try {
    secret = (await addSubscription(store, receiver.url, 'wh_workers', ['newPlant'])).secret;
  } finally {
    await store.close();
  }
  const server = await spawnServer(t, { DATABASE_URL: databaseUrl, BOOTSTRAP_TOKEN: 'false', WORKERS: String(WORKERS), WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' });
  await eventually(() => server.stdout().includes('plant-store is listening'), 'every worker listening', 20_000);
  const port = portOf(server.url);
  const ids = Array.from({ length: 40 }, (_, i) => BigInt(i + 1));
  const answers = await Promise.all(ids.map((id) => fresh(port, '/plants', token, { method: 'POST', body: `{"id":${id},"name":"p${id}"}` })));
  assert.deepEqual(answers.map((a) => a.status), ids.map(() => 200));

  await receiver.until((r) => r.byId.size === ids.length, 20_000);
  // Real time, as a bound: a second sender would deliver at about the same moment as the first.
  await sleep(1_000);
  assert.deepEqual(receiver.problems, []);
  assert.equal(receiver.requests.length, ids.length, 'an event was delivered more than once');
  const delivered = [...receiver.byId.values()].map((r) => (JSON.parse(r.body) as { id: number }).id).sort((a, b) => a - b);
  assert.deepEqual(delivered, ids.map(Number));

  const feed = await fresh(port, '/events?limit=100', token);
  const events = JSON.parse(feed.body) as { id: string; data: { id: number } }[];
  assert.equal(events.length, ids.length);
  assert.equal(new Set(events.map((e) => e.id)).size, ids.length);
  assert.deepEqual(new Set(events.map((e) => e.id)), new Set(receiver.byId.keys()));
  server.proc.kill('SIGTERM');
  assert.equal(await server.exited, 0);
});

test('a revoked token stops working on every worker within 5 s', async (t) => {
  const { databaseUrl, server, port } = await serveWorkers(t);
  const made = await runCli(['token', 'create', '--scopes', 'plants:read', '--name', 'short-lived'], { DATABASE_URL: databaseUrl });
  const [, id] = /Created token (\S+)/.exec(made.stdout)!;
  const secret = made.stdout.trim().split('\n').at(-1)!;
  // Used through every worker, so each has it cached.
  const before = await Promise.all(Array.from({ length: 10 }, () => fresh(port, '/plants', secret)));
  assert.deepEqual(before.map((r) => r.status), before.map(() => 200));

  const revoked = await runCli(['token', 'revoke', id!], { DATABASE_URL: databaseUrl });
  assert.equal(revoked.code, 0, revoked.stderr);
  const at = Date.now();
  let statuses: number[] = [];
  const refusedByAll = async () => {
    statuses = (await Promise.all(Array.from({ length: 10 }, () => fresh(port, '/plants', secret)))).map((r) => r.status);
    return statuses.every((s) => s === 401);
  };
  await eventually(refusedByAll, 'every worker refusing the revoked token', 5_000, 100).catch(() => {});
  assert.deepEqual(statuses, statuses.map(() => 401), `still accepted ${Date.now() - at} ms after the revocation`);
  t.diagnostic(`refused by every worker ${Date.now() - at} ms after the revocation`);
});

test('GET /metrics through any worker counts the requests of every worker; /readyz is ready on each', async (t) => {
  const { databaseUrl, server, port } = await serveWorkers(t);
  const made = await runCli(['token', 'create', '--scopes', 'plants:read,metrics:read', '--name', 'scraper'], { DATABASE_URL: databaseUrl });
  const token = made.stdout.trim().split('\n').at(-1)!;
  const N = 30;
  const reads = await Promise.all(Array.from({ length: N }, () => fresh(port, '/plants', token)));
  assert.deepEqual(reads.map((r) => r.status), reads.map(() => 200));
  const ready = await Promise.all(Array.from({ length: 6 }, () => fresh(port, '/readyz', token)));
  assert.deepEqual(ready.map((r) => r.status), ready.map(() => 200));
  // Several scrapes, over fresh connections: whichever worker answers, the count is the server's.
  for (let i = 0; i < 4; i++) {
    const metrics = await fresh(port, '/metrics', token);
    assert.equal(metrics.status, 200, metrics.body);
    const m = /^plant_store_http_requests_total\{operation="listPlants",status="200"\} (\d+)$/m.exec(metrics.body);
    assert.equal(Number(m?.[1]), N, metrics.body.split('\n').filter((l) => l.includes('listPlants')).join('\n'));
    // Read from the store, not added up once per process.
    assert.match(metrics.body, /^plant_store_webhook_outbox_pending 0$/m);
  }
  assert.equal(workerPids(server).length, WORKERS);
});

test('WORKERS=auto starts one worker per available core; an in-memory database always runs in one process', async (t) => {
  const { databaseUrl } = await databaseWithToken(t);
  const auto = await spawnServer(t, { DATABASE_URL: databaseUrl, BOOTSTRAP_TOKEN: 'false', WORKERS: 'auto' });
  await eventually(() => auto.stdout().includes('plant-store is listening'), 'every worker listening', 30_000);
  assert.equal(workerPids(auto).length, availableParallelism());
  auto.proc.kill('SIGTERM');
  assert.equal(await auto.exited, 0);

  const memory = await spawnServer(t, { DATABASE_URL: 'sqlite::memory:', BOOTSTRAP_TOKEN: 'false', WORKERS: '4' });
  await eventually(() => memory.stdout().includes('plant-store is listening'), 'the server listening', 20_000);
  assert.equal(workerPids(memory).length, 0);
  assert.doesNotMatch(memory.stdout(), /"role":"primary"/);
  memory.proc.kill('SIGTERM');
  assert.equal(await memory.exited, 0);
});

test('the primary warns when the workers\' pools could ask PostgreSQL for more connections than it allows (a SQLite file has no such limit)', async (t) => {
  const { databaseUrl } = await databaseWithToken(t);
  const server = await spawnServer(t, { DATABASE_URL: databaseUrl, BOOTSTRAP_TOKEN: 'false', WORKERS: '2', DATABASE_POOL_SIZE: '1000' });
  await eventually(() => server.stdout().includes('plant-store is listening'), 'every worker listening', 20_000);
  const warning = server
    .stdout()
    .split('\n')
    .filter((l) => l.includes('more connections than the database allows'))
    .map((l) => JSON.parse(l) as { connections: number; databaseLimit: number });
  if (TEST_STORE === 'postgres') {
    assert.equal(warning.length, 1, server.stdout());
    assert.equal(warning[0]!.connections, 2_000);
    assert.ok(warning[0]!.databaseLimit > 0 && warning[0]!.databaseLimit < 2_000);
  } else {
    assert.deepEqual(warning, []);
  }
  server.proc.kill('SIGTERM');
  assert.equal(await server.exited, 0);
});

test('kill -9 of every worker, four rounds in a row: the primary stays, and each time a worker serves again within 3 s', async (t) => {
  const { token, server, port } = await serveWorkers(t);
  // A worker cannot serve sooner than a worker starts: on a machine so loaded that the first two workers took
  // more than 1.25 s to listen, the bound is twice that and 0.5 s. The shared back-off this replaced waited 4 s,
  // then 8-10 s, from the third round on, over and above the start.
  const at = (msg: string) => (JSON.parse(server.stdout().split('\n').find((l) => l.includes(`"msg":"${msg}"`))!) as { time: number }).time;
  const startMs = at('plant-store is listening') - at('worker started');
  const limit = Math.max(3_000, 2 * startMs + 500);
  const waits: number[] = [];
  for (let round = 0; round < 4; round++) {
    // Every worker the primary has started so far, the replacements of the round before included.
    const killedAt = Date.now();
    for (const pid of workerPids(server)) if (alive(pid)) process.kill(pid, 'SIGKILL');
    let answer = { status: 0, body: '' };
    // A connection the primary took just as the last worker died is lost with it (Node's cluster hands it to
    // the dead worker): such a client waits for its timeout, and tries again.
    const served = async () => (answer = await fresh(port, '/plants', token, { timeoutMs: 300 }).catch(() => ({ status: 0, body: '' }))).status === 200;
    await eventually(served, 'a worker serving again', 10_000, 20).catch(() => {}); // asserted below
    waits.push(Date.now() - killedAt);
    assert.equal(answer.status, 200, `round ${round + 1}: ${answer.body}`);
  }
  t.diagnostic(`a worker served again after ${waits.join(', ')} ms (the first workers started in ${startMs} ms)`);
  assert.ok(waits.every((ms) => ms < limit), `no worker served for ${waits.join(', ')} ms (limit ${limit} ms)`);
  assert.equal(server.proc.exitCode, null, 'the primary exited with its workers');
  server.proc.kill('SIGTERM');
  assert.equal(await server.exited, 0);
});
