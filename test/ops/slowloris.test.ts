// Slowloris: 400 connections trickle request headers a byte at a time and never finish them. Normal clients
// keep being served with bounded latency meanwhile, and the server cuts every trickling connection once
// HEADERS_TIMEOUT_MS has passed (408 Error, connection closed). The server is a separate process, as in
// production, so the trickling clients do not share its event loop.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { spawnServer } from '../helpers/app.js';
import { sleep } from '../helpers/sleep.js';
import { databaseWithToken, portOf } from '../helpers/cli.js';

const SLOW = 400;
const HEADERS_TIMEOUT_MS = 2_000;

interface Slow {
  socket: Socket;
  received: string;
  /** ms after its first byte that the server closed it; undefined while open. */
  closedAfterMs?: number;
}

test(`${SLOW} slowloris connections do not starve normal clients and are cut at the headers timeout`, async (t) => {
  const { databaseUrl, token } = await databaseWithToken(t);
  const server = await spawnServer(t, {
    DATABASE_URL: databaseUrl,
    BOOTSTRAP_TOKEN: 'false',
    HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
    REQUEST_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
  });
  const port = portOf(server.url);

  const slow: Slow[] = await Promise.all(
    Array.from({ length: SLOW }, () => new Promise<Slow>((resolve, reject) => {
      const s: Slow = { socket: connect(port, '127.0.0.1'), received: '' };
      s.socket.once('connect', () => resolve(s));
      s.socket.once('error', reject);
    })),
  );
  const started = Date.now();
  for (const s of slow) {
    s.socket.removeAllListeners('error');
    s.socket.on('error', () => {});
    s.socket.on('data', (d: Buffer) => (s.received += d.toString('latin1')));
    s.socket.on('close', () => (s.closedAfterMs = Date.now() - started));
    s.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nX-Trickle: ');
  }
  // One byte per connection every 100 ms, for as long as the connection is open.
  const trickle = setInterval(() => {
    for (const s of slow) if (s.closedAfterMs === undefined) s.socket.write('a');
  }, 100);
  t.after(() => {
    clearInterval(trickle);
    for (const s of slow) s.socket.destroy();
  });

  // Normal clients meanwhile: a create and a read every 50 ms until every slow connection is gone.
  const latencies: number[] = [];
  const statuses: number[] = [];
  let id = 1;
  const deadline = started + HEADERS_TIMEOUT_MS + 8_000;
  while (slow.some((s) => s.closedAfterMs === undefined) && Date.now() < deadline) {
    const t0 = performance.now();
    const created = await fetch(`${server.url}/plants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ id: id++, name: 'normal' }),
    });
    statuses.push(created.status);
    await created.arrayBuffer();
    const read = await fetch(`${server.url}/plants?limit=5`, { headers: { authorization: `Bearer ${token}` } });
    statuses.push(read.status);
    await read.arrayBuffer();
    latencies.push(performance.now() - t0);
    // Real time: normal clients come every 50 ms while the slow ones trickle.
    await sleep(50);
  }
  clearInterval(trickle);

  latencies.sort((a, b) => a - b);
  const p50 = latencies[Math.floor(latencies.length / 2)] ?? NaN;
  const max = latencies.at(-1) ?? NaN;
  const cut = slow.filter((s) => s.closedAfterMs !== undefined);
  const closedAt = cut.map((s) => s.closedAfterMs!).sort((a, b) => a - b);
  t.diagnostic(`normal round trips: ${latencies.length}, p50 ${p50.toFixed(1)} ms, max ${max.toFixed(1)} ms; ` +
    `slow connections cut: ${cut.length}/${SLOW}, first at ${closedAt[0]} ms, last at ${closedAt.at(-1)} ms`);

  assert.ok(latencies.length >= 10, `normal clients were served while the slow ones trickled (${latencies.length})`);
  assert.deepEqual([...new Set(statuses)], [200], 'every normal request succeeded');
  assert.ok(max < 1_500, `a normal round trip took ${max.toFixed(0)} ms while slow clients trickled`);
  assert.equal(cut.length, SLOW, 'every slow connection was cut by the server');
  assert.ok(closedAt[0]! >= HEADERS_TIMEOUT_MS - 100, `cut before the headers timeout (${closedAt[0]} ms)`);
  assert.ok(closedAt.at(-1)! <= HEADERS_TIMEOUT_MS + 4_000, `cut late (${closedAt.at(-1)} ms)`);
  const answered = slow.filter((s) => / 408 /.test(s.received.split('\r\n')[0] ?? ''));
  assert.ok(answered.length >= SLOW * 0.9, `most slow connections got the 408 Error before the close (${answered.length}/${SLOW})`);
  assert.equal(server.proc.exitCode, null, 'the server is still running');
});
