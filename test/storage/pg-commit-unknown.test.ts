// A connection lost after COMMIT was sent: the transaction may have committed, so the 503 must not claim
// that nothing was saved, and the retry the message invites must be answered 200 (a replay). A TCP proxy on
// loopback forwards the COMMIT to the real server, then cuts the connection before the answer comes back.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, createServer, type Socket } from 'node:net';
import { errorOf, startApp } from '../helpers/app.js';
import { freshPostgresUrl } from '../helpers/test-store.js';

/**
 * Forwards to `target`. Once armed with a marker, the connection that sends the marker (the create's bound
 * parameters) has its next COMMIT forwarded and then both sides cut before the answer returns.
 */
async function cuttingProxy(target: URL) {
  let armed: string | undefined;
  let cuts = 0;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    sockets.add(client).add(upstream);
    client.on('error', () => {});
    upstream.on('error', () => {});
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    upstream.on('data', (d) => client.write(d));
    let marked = false;
    client.on('data', (d) => {
      upstream.write(d);
      if (armed && d.includes(armed)) marked = true;
      if (marked && d.includes('COMMIT')) {
        armed = undefined;
        marked = false;
        cuts++;
        // Let the server read and commit it, but never let its answer reach the client: both sides are cut as
        // the answer arrives.
        upstream.removeAllListeners('data');
        upstream.once('data', () => {
          client.destroy();
          upstream.destroy();
        });
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    port: (server.address() as { port: number }).port,
    arm: (marker: string) => (armed = marker),
    cuts: () => cuts,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

test('postgres: a connection lost after COMMIT gives a 503 that says the outcome is unknown; the retry is a 200 replay', async (t) => {
  const direct = new URL(await freshPostgresUrl(t));
  const proxy = await cuttingProxy(direct);
  t.after(() => proxy.close());
  const viaProxy = new URL(direct);
  viaProxy.port = String(proxy.port);
  const app = await startApp(t, { databaseUrl: viaProxy.toString() });

  assert.equal((await app.postPlant({ id: 1, name: 'before' })).status, 200);
  const name = 'cut-at-commit-7f3a';
  proxy.arm(name);
  const res = await app.postPlant({ id: 2, name });
  assert.equal(proxy.cuts(), 1, 'the proxy saw the COMMIT');
  assert.equal(res.status, 503);
  assert.equal(res.headers.get('retry-after'), '1');
  const body = await errorOf(res);
  assert.match(body.message, /may or may not have been saved/);
  assert.doesNotMatch(body.message, /nothing was saved/);

  // The server did commit it; the pool opens a new connection and the retry is answered as a replay.
  const retry = await app.postPlant({ id: 2, name });
  assert.equal(retry.status, 200);
  assert.deepEqual(await retry.json(), { name });
  const read = await fetch(`${app.url}/plants/2`, { headers: { authorization: `Bearer ${app.token.read}` } });
  assert.equal(read.status, 200);
});
