// Graceful shutdown of the real `plant-store serve`: SIGTERM/SIGINT stop accepting, let in-flight requests
// finish, answer late arrivals with a 503 Error, commit what was acknowledged and exit 0 in bounded time, and
// say so without an error line (each process says a refusal once, at info).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { spawnServer, type ChildServer } from '../helpers/app.js';
import { openStore } from '../../src/storage/open-store.js';
import { postRaw, readWhatWasSent, splitResponses as responses } from '../helpers/raw-request.js';
import { eventually, sleep, within } from '../helpers/sleep.js';
import { refused } from '../helpers/ports.js';
import { databaseWithToken, portOf } from '../helpers/cli.js';
import { runLoad, summarize, type LoadResult } from '../helpers/load.js';
import { storedPlant } from '../helpers/stored-plant.js';

async function setup(t: TestContext, extraEnv: Record<string, string> = {}) {
  const { databaseUrl, token } = await databaseWithToken(t);
  const server = await spawnServer(t, { DATABASE_URL: databaseUrl, BOOTSTRAP_TOKEN: 'false', ...extraEnv });
  return { databaseUrl, token, server, port: portOf(server.url) };
}

/** A raw connection that collects everything the server writes, and when it closed. */
function rawConnection(port: number) {
  const socket: Socket = connect(port, '127.0.0.1');
  let data = '';
  let closedAt: number | undefined;
  socket.on('data', (d) => (data += d.toString('latin1')));
  socket.on('error', () => {});
  socket.on('close', () => (closedAt = Date.now()));
  const connected = new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  return { socket, connected, data: () => data, closedAt: () => closedAt };
}

function postHead(token: string, length: number): string {
  return `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;
}

async function exitWithin(server: ChildServer, ms: number): Promise<{ code: number | string; ms: number }> {
  const started = Date.now();
  const code = await within(server.exited, ms, 'still running' as const);
  return { code, ms: Date.now() - started };
}

/** Waits until the server has begun its drain: it says so, and stops taking new work, in one step. */
function draining(server: ChildServer, what: string): Promise<unknown> {
  return eventually(() => server.stdout().includes('"msg":"shutting down: finishing in-flight requests"'), `the server draining after ${what}`, 5_000);
}

test('SIGTERM under 50 concurrent writers: every request gets 200, a 503 Error or a refused/closed connection; exit 0; every 200 is stored, nothing else', async (t) => {
  const SHUTDOWN_TIMEOUT_MS = 5_000;
  const { databaseUrl, token, server, port } = await setup(t, { SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS) });

  const t0 = Date.now();
  let signalled = false;
  let signalAt = 0;
  const live: LoadResult = { ok: new Map(), statuses: new Map(), errors: new Map(), sent: 0 };
  const load = runLoad({ port, token, clients: 50, firstId: 1n, until: () => Date.now() - t0 > 30_000, stopOnError: () => signalled, startedAt: t0, result: live });
  // Until enough writes were acknowledged to mean something (on a loaded machine that takes longer).
  await eventually(() => live.ok.size >= 150, '150 writes acknowledged', 20_000, 100).catch(() => {}); // the assertions below judge the load
  signalAt = Date.now() - t0;
  signalled = true;
  server.proc.kill('SIGTERM');
  const exit = await exitWithin(server, SHUTDOWN_TIMEOUT_MS + 3_000);
  const result = await load;
  t.diagnostic(`${summarize(result)}; SIGTERM at ${signalAt} ms; exit ${exit.code} after ${exit.ms} ms`);

  assert.equal(exit.code, 0, server.stderr());
  assert.ok(exit.ms < SHUTDOWN_TIMEOUT_MS, `exit took ${exit.ms} ms`);
  assert.ok(result.ok.size >= 100, `too little load to mean anything: ${summarize(result)}`);
  assert.match(server.stdout(), /"msg":"stopped"/);

  // Before the signal everything succeeded; after it, late requests got a 503 Error, or their connection
  // was refused or closed by the stopping server. Nothing else.
  for (const [status, s] of result.statuses) {
    assert.equal(status, 503, `unexpected status ${status}: ${s.sample}`);
    assert.deepEqual(Object.keys(JSON.parse(s.sample)).sort(), ['error', 'message']);
    assert.equal(JSON.parse(s.sample).error, 503);
    assert.ok(Math.min(...s.at) >= signalAt, '503 before the signal');
  }
  // A request that reached the server is answered: idle keep-alive connections stay open for the drain's
  // grace, so a client that wrote its next request on one gets the 503, not a reset.
  for (const [code, e] of result.errors) {
    assert.ok(['ECONNREFUSED'].includes(code), `unexpected error ${code} (${e.ids.length} requests)`);
    assert.ok(Math.min(...e.at) >= signalAt, `${code} before the signal`);
  }

  const { store } = await openStore(databaseUrl);
  try {
    const missing = [];
    for (const id of result.ok.keys()) if (!(await storedPlant(store, id))) missing.push(id);
    assert.deepEqual(missing, [], 'acknowledged plants missing after a graceful stop');
    // A request whose connection was refused or cut was never taken in: had the server read it, it would
    // have been answered. So none of them is stored, nor any 503, and nothing nobody sent.
    const cut = [...result.errors.values()].flatMap((e) => e.ids);
    const storedCut = [];
    for (const id of cut) if (await storedPlant(store, id)) storedCut.push(id);
    assert.deepEqual(storedCut, [], 'requests stored without an answer: in-flight requests were dropped');
    assert.equal(await store.countPlants(), result.ok.size);
  } finally {
    await store.close();
  }
});

test('a request whose body is still arriving at SIGTERM is finished: 200 with Connection: close, stored, and the exit follows at once', async (t) => {
  // A long keep-alive timeout: the exit must not wait for the finished connection to go idle.
  const { databaseUrl, token, server, port } = await setup(t, { KEEP_ALIVE_TIMEOUT_MS: '30000' });
  const body = '{"id":4242,"name":"in flight"}';
  const conn = rawConnection(port);
  await conn.connected;
  conn.socket.write(postHead(token, Buffer.byteLength(body)) + body.slice(0, 10));
  // The request is in flight (its head read) when the signal comes.
  await readWhatWasSent(port);

  server.proc.kill('SIGTERM');
  await eventually(() => refused(port), 'the port closed after SIGTERM', 5_000);
  // New connections are refused now.
  const late = await postRaw(port, token, '{"id":1,"name":"new"}');
  assert.deepEqual(late, { kind: 'error', code: 'ECONNREFUSED' });
  // Real time, as a bound: with the request in flight, the process is still there 400 ms into the drain.
  await sleep(400);
  assert.equal(server.proc.exitCode, null, 'the server exited with a request in flight');

  conn.socket.write(body.slice(10));
  await eventually(() => responses(conn.data()).length > 0, 'the answer', 5_000);
  const answeredAt = Date.now();
  const [first] = responses(conn.data());
  assert.equal(first!.status, 200, conn.data());
  assert.deepEqual(JSON.parse(first!.body), { name: 'in flight' });
  assert.equal(first!.headers['connection'], 'close', 'the client is told not to reuse the connection');
  await eventually(() => conn.closedAt() !== undefined, 'the server to close the connection', 2_000);

  const exit = await exitWithin(server, 5_000);
  t.diagnostic(`exit ${exit.code} ${Date.now() - answeredAt} ms after the answer`);
  assert.equal(exit.code, 0);
  assert.ok(Date.now() - answeredAt < 2_000, 'the exit waited for the keep-alive timeout');
  const { store } = await openStore(databaseUrl);
  t.after(() => store.close());
  assert.deepEqual(await storedPlant(store, 4242n), { id: 4242n, name: 'in flight' });
});

test('a request pipelined behind an in-flight one after SIGTERM is not processed: answered 503 or not at all, never stored', async (t) => {
  const { databaseUrl, token, server, port } = await setup(t);
  const body = '{"id":4242,"name":"in flight"}';
  const late = '{"id":4343,"name":"too late"}';
  const conn = rawConnection(port);
  await conn.connected;
  conn.socket.write(postHead(token, Buffer.byteLength(body)) + body.slice(0, 10));
  await readWhatWasSent(port);
  server.proc.kill('SIGTERM');
  await draining(server, 'SIGTERM');
  conn.socket.write(body.slice(10) + postHead(token, Buffer.byteLength(late)) + late);
  await eventually(() => conn.closedAt() !== undefined, 'the connection to close', 5_000);

  const [first, second, ...more] = responses(conn.data());
  assert.equal(first?.status, 200, conn.data());
  assert.equal(first!.headers['connection'], 'close');
  if (second) {
    // Answered: the shutdown's Error, which closes the connection too.
    assert.equal(second.status, 503, conn.data());
    assert.deepEqual(Object.keys(JSON.parse(second.body)).sort(), ['error', 'message']);
    assert.match(JSON.parse(second.body).message, /shutting down/);
  }
  assert.deepEqual(more, []);
  t.diagnostic(`the pipelined request was ${second ? `answered ${second.status}` : 'left unanswered after Connection: close'}`);

  assert.equal((await exitWithin(server, 5_000)).code, 0);
  const { store } = await openStore(databaseUrl);
  t.after(() => store.close());
  assert.deepEqual(await storedPlant(store, 4242n), { id: 4242n, name: 'in flight' });
  assert.equal(await storedPlant(store, 4343n), undefined);
});

test('a request that never finishes does not hold the process past SHUTDOWN_TIMEOUT_MS; it exits 0 and keeps nothing of it', async (t) => {
  const { databaseUrl, token, server, port } = await setup(t, { SHUTDOWN_TIMEOUT_MS: '1000' });
  const body = '{"id":5151,"name":"never finished"}';
  const conn = rawConnection(port);
  await conn.connected;
  conn.socket.write(postHead(token, Buffer.byteLength(body)) + body.slice(0, 5));
  await readWhatWasSent(port);

  server.proc.kill('SIGTERM');
  const exit = await exitWithin(server, 6_000);
  t.diagnostic(`exit ${exit.code} after ${exit.ms} ms`);
  assert.equal(exit.code, 0, server.stderr());
  assert.ok(exit.ms >= 900, `exited before the grace period ended (${exit.ms} ms)`);
  assert.ok(exit.ms < 4_000, `took ${exit.ms} ms`);
  assert.match(server.stdout(), /shutdown timed out/);
  await eventually(() => conn.closedAt() !== undefined, 'the slow connection to close', 2_000);
  assert.equal(conn.data(), '', 'the unfinished request got no answer but a closed connection');

  const { store } = await openStore(databaseUrl);
  t.after(() => store.close());
  assert.equal(await storedPlant(store, 5151n), undefined);
});

test('a repeated signal during shutdown (Ctrl-C under npm start delivers SIGINT twice) does not kill the in-flight request', async (t) => {
  for (const [first, second] of [['SIGINT', 'SIGINT'], ['SIGTERM', 'SIGTERM']] as const) {
    const { databaseUrl, token, server, port } = await setup(t);
    const body = '{"id":99,"name":"twice"}';
    const conn = rawConnection(port);
    await conn.connected;
    conn.socket.write(postHead(token, Buffer.byteLength(body)) + body.slice(0, 6));
    await readWhatWasSent(port);
    server.proc.kill(first);
    await draining(server, first);
    server.proc.kill(second);
    await eventually(
      () => server.stdout().includes('"msg":"already shutting down; waiting for in-flight requests"') || server.proc.signalCode !== null,
      `the server taking ${second} after ${first}`,
      5_000,
    );
    assert.equal(server.proc.signalCode, null, `${first} then ${second} killed the server`);
    conn.socket.write(body.slice(6));
    await eventually(() => responses(conn.data()).length > 0, `the answer after ${first} and ${second}: ${conn.data()}`, 5_000);
    assert.equal(responses(conn.data())[0]?.status, 200, `${first}+${second}: ${conn.data()}`);
    assert.equal((await exitWithin(server, 5_000)).code, 0);
    const { store } = await openStore(databaseUrl);
    assert.deepEqual(await storedPlant(store, 99n), { id: 99n, name: 'twice' });
    await store.close();
  }
});

test('SIGINT stops the server the same way: exit 0, plants kept', async (t) => {
  const { databaseUrl, token, server, port } = await setup(t);
  const res = await postRaw(port, token, '{"id":7,"name":"sigint"}');
  assert.equal(res.kind === 'response' && res.status, 200);
  server.proc.kill('SIGINT');
  assert.equal((await exitWithin(server, 5_000)).code, 0);
  assert.match(server.stdout(), /"signal":"SIGINT"/);
  const { store } = await openStore(databaseUrl);
  t.after(() => store.close());
  assert.deepEqual(await storedPlant(store, 7n), { id: 7n, name: 'sigint' });
});

test('an idle server exits promptly on SIGTERM, even with an idle keep-alive connection open', async (t) => {
  const { token, server, port } = await setup(t);
  // A keep-alive connection left idle after one request.
  const conn = rawConnection(port);
  await conn.connected;
  const body = '{"id":8,"name":"idle"}';
  conn.socket.write(postHead(token, Buffer.byteLength(body)) + body);
  await eventually(() => responses(conn.data()).length === 1, 'the first answer', 5_000);
  server.proc.kill('SIGTERM');
  const exit = await exitWithin(server, 5_000);
  t.diagnostic(`exit ${exit.code} after ${exit.ms} ms`);
  assert.equal(exit.code, 0);
  assert.ok(exit.ms < 2_000, `idle connection delayed the exit by ${exit.ms} ms`);
});

test('a request written on an idle keep-alive connection during the drain gets the 503 with Retry-After and Connection: close, not a reset', async (t) => {
  const { databaseUrl, token, server, port } = await setup(t, { KEEP_ALIVE_TIMEOUT_MS: '30000' });
  const conns = [rawConnection(port), rawConnection(port), rawConnection(port)];
  for (const [i, conn] of conns.entries()) {
    await conn.connected;
    const body = `{"id":${60 + i},"name":"before"}`;
    conn.socket.write(postHead(token, Buffer.byteLength(body)) + body);
    await eventually(() => responses(conn.data()).length === 1, 'the first answer', 5_000);
  }
  server.proc.kill('SIGTERM');
  // The clients write their next request on their idle connections just after the signal.
  await draining(server, 'SIGTERM');
  for (const [i, conn] of conns.entries()) {
    const late = `{"id":${70 + i},"name":"during the drain"}`;
    conn.socket.write(postHead(token, Buffer.byteLength(late)) + late);
  }
  for (const conn of conns) {
    await eventually(() => conn.closedAt() !== undefined, 'the connection to close', 5_000);
    const [, late, ...more] = responses(conn.data());
    assert.equal(late?.status, 503, conn.data());
    assert.equal(late!.headers['connection'], 'close');
    assert.equal(late!.headers['retry-after'], '1');
    assert.match(JSON.parse(late!.body).message, /shutting down/);
    assert.deepEqual(more, []);
  }
  assert.equal((await exitWithin(server, 5_000)).code, 0);
  const { store } = await openStore(databaseUrl);
  t.after(() => store.close());
  for (const i of [0, 1, 2]) {
    assert.deepEqual(await storedPlant(store, BigInt(60 + i)), { id: BigInt(60 + i), name: 'before' });
    assert.equal(await storedPlant(store, BigInt(70 + i)), undefined);
  }
});

test('WORKERS=2 stopped as a process group, POSTs arriving while draining: the log has no error line and no stack, and each process says a refusal or a repeated signal at most once', async (t) => {
  const { token, server, port } = await setup(t, { WORKERS: '2', KEEP_ALIVE_TIMEOUT_MS: '30000' });
  await eventually(() => server.stdout().includes('plant-store is listening'), 'every worker listening', 20_000);
  const workers = server
    .stdout()
    .split('\n')
    .filter((l) => l.includes('"worker started"'))
    .map((l) => (JSON.parse(l) as { pid: number }).pid);
  assert.equal(workers.length, 2);
  // Keep-alive connections over both workers (the primary hands them out in turn), each with a request done.
  const conns = Array.from({ length: 6 }, () => rawConnection(port));
  for (const [i, conn] of conns.entries()) {
    await conn.connected;
    const body = `{"id":${80 + i},"name":"before"}`;
    conn.socket.write(postHead(token, Buffer.byteLength(body)) + body);
    await eventually(() => responses(conn.data()).length === 1, 'the first answer', 5_000);
  }
  // As Ctrl-C or systemd's stop: every process of the group gets the signal, and the primary forwards it too.
  server.proc.kill('SIGTERM');
  for (const pid of workers) process.kill(pid, 'SIGTERM');
  const drainLines = () => server.stdout().split('\n').filter((l) => l.includes('"msg":"shutting down: finishing in-flight requests"')).length;
  await eventually(() => drainLines() === workers.length, () => `every worker draining (${drainLines()} of ${workers.length})`, 5_000);
  for (const [i, conn] of conns.entries()) {
    const late = `{"id":${90 + i},"name":"during the drain"}`;
    conn.socket.write(postHead(token, Buffer.byteLength(late)) + late);
  }
  for (const conn of conns) await eventually(() => conn.closedAt() !== undefined, 'the connection to close', 5_000);
  assert.equal((await exitWithin(server, 5_000)).code, 0, server.stderr());
  const refused = conns.filter((c) => responses(c.data())[1]?.status === 503).length;
  assert.ok(refused >= 2, `only ${refused} requests were refused while draining`);

  const lines = server
    .stdout()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { level: number; msg: string; role?: string; worker?: number; err?: unknown });
  assert.deepEqual(lines.filter((l) => l.level >= 50 || l.err !== undefined), []);
  assert.doesNotMatch(server.stdout(), /stack/i);
  assert.equal(server.stderr(), '');
  // Besides each request's access line: what a process says of refusals and repeated signals, once at most.
  const said = new Map<string, number>();
  for (const l of lines) {
    if (!/refused|already shutting down/.test(l.msg)) continue;
    const key = `${l.role ?? `worker ${l.worker}`}: ${l.msg}`;
    said.set(key, (said.get(key) ?? 0) + 1);
  }
  t.diagnostic(`${refused} refused; ${[...said].map(([k, n]) => `${k} (${n})`).join('; ')}`);
  assert.ok(said.size > 0, 'no process said it refused requests');
  assert.deepEqual([...said].filter(([, n]) => n > 1), []);
});
