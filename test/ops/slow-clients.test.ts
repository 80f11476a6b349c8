// Slow clients: a request whose body or headers never finish is cut off after the configured timeout with
// a 408 Error and a closed connection, stores nothing, and does not stop the server serving others.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { startApp } from '../helpers/app.js';
import { parseRawResponse } from '../helpers/raw-request.js';
import { eventually, sleep } from '../helpers/sleep.js';
import { storedPlant } from '../helpers/stored-plant.js';
import { ResponseValidator } from '../helpers/response-validator.js';

const TIMEOUT_MS = 1_000;

/** Opens a connection, writes `data`, and resolves with what came back and when the server closed it. */
function stall(port: number, data: string): Promise<{ received: string; closedAfterMs: number }> {
  return new Promise((resolve) => {
    const started = Date.now();
    const socket = connect(port, '127.0.0.1', () => socket.write(data));
    let received = '';
    socket.on('data', (d) => (received += d.toString('latin1')));
    socket.on('error', () => {});
    socket.on('close', () => resolve({ received, closedAfterMs: Date.now() - started }));
    // Never more than this: a server that never cuts the client off fails the test instead of hanging it.
    setTimeout(() => socket.destroy(), 15_000).unref();
  });
}

test('a body that never finishes and headers that never finish are cut off with a 408 Error; others are served meanwhile', async (t) => {
  const s = await startApp(t, { config: { requestTimeoutMs: TIMEOUT_MS, headersTimeoutMs: TIMEOUT_MS } });
  const body = '{"id":606,"name":"never arrives"}';
  const slowBody = stall(
    s.port,
    `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.token.write}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 8)}`,
  );
  const slowHeaders = stall(s.port, `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Waiting: `);
  // Many idle slow clients at once.
  const crowd = Array.from({ length: 20 }, () => stall(s.port, 'POST /plants HTTP/1.1\r\nHost: x\r\n'));

  // While they stall (every one of them connected), the server answers everyone else at once.
  const connections = () => new Promise<number>((resolve, reject) => s.app.server.getConnections((err, n) => (err ? reject(err) : resolve(n))));
  await eventually(async () => (await connections()) >= 22, 'the 22 slow clients connected');
  for (let i = 0; i < 5; i++) {
    const started = Date.now();
    const res = await s.postPlant({ id: i + 1, name: `normal ${i}` });
    assert.equal(res.status, 200);
    assert.ok(Date.now() - started < 500, 'a normal request waited for the slow ones');
  }

  const validator = new ResponseValidator();
  for (const [what, pending, method, path] of [['body', slowBody, 'POST', '/plants'], ['headers', slowHeaders, 'GET', '/healthz']] as const) {
    const { received, closedAfterMs } = await pending;
    t.diagnostic(`slow ${what}: closed after ${closedAfterMs} ms`);
    assert.ok(closedAfterMs >= TIMEOUT_MS - 50, `${what}: cut off before the timeout (${closedAfterMs} ms)`);
    assert.ok(closedAfterMs < TIMEOUT_MS + 5_000, `${what}: cut off late (${closedAfterMs} ms)`);
    const res = parseRawResponse(received);
    assert.equal(res.status, 408, `${what}: ${received}`);
    assert.match(res.headers['content-type'] ?? '', /^application\/json/);
    assert.equal(res.headers['connection'], 'close');
    assert.deepEqual(JSON.parse(res.body), { error: 408, message: JSON.parse(res.body).message });
    assert.ok(JSON.parse(res.body).message.length > 0);
    // Raw sockets skip the suite's fetch check: the 408 is held to the operation's declaration here.
    assert.deepEqual(await validator.check(method, path, { status: res.status, headers: new Headers(res.headers), body: res.body }), [], what);
  }
  for (const { received } of await Promise.all(crowd)) assert.equal(parseRawResponse(received).status, 408);

  assert.equal(await storedPlant(s.store, 606n), undefined, 'the unfinished plant was stored');
  assert.equal(await s.store.countPlants(), 5);
  // And the server is still fine afterwards.
  assert.equal((await fetch(`${s.url}/healthz`)).status, 200);
});

test('a slow but steady client that finishes within the timeout is served normally', async (t) => {
  const s = await startApp(t, { config: { requestTimeoutMs: 3_000, headersTimeoutMs: 3_000 } });
  const body = '{"id":707,"name":"patient"}';
  const socket = connect(s.port, '127.0.0.1');
  let received = '';
  socket.on('data', (d) => (received += d.toString('latin1')));
  await new Promise((r) => socket.once('connect', r));
  socket.write(`POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.token.write}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
  for (const chunk of body.match(/.{1,6}/g)!) {
    // Real time: a slow client, its body in chunks 100 ms apart.
    await sleep(100);
    socket.write(chunk);
  }
  await eventually(() => received.includes('\r\n\r\n{'), 'the answer', 5_000, 20).catch(() => {});
  socket.destroy();
  const res = parseRawResponse(received);
  assert.equal(res.status, 200, received);
  assert.deepEqual(JSON.parse(res.body), { name: 'patient' });
  assert.deepEqual(await storedPlant(s.store, 707n), { id: 707n, name: 'patient' });
});
