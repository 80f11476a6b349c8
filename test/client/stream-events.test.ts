// streamEvents, the typed client's stream of the feed, used as an application uses it: it yields every event
// with exact bigint ids, a reader that stops and starts again with the last id it handled misses nothing and
// sees nothing twice, it reconnects by itself with Last-Event-ID when a server stops and another starts, and
// it waits Retry-After (and its back-off) when refused, rather than hammering.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { streamEvents, type StreamedEvent } from '@plant-store/client';
import { spawnServer, startApp } from '../helpers/app.js';
import { clientFor } from '../helpers/client.js';
import { databaseWithToken } from '../helpers/cli.js';
import { freePort, refused } from '../helpers/ports.js';
import { createPlant } from '../helpers/requests.js';
import { eventually } from '../helpers/sleep.js';

/** Takes `n` events from a stream, then stops iterating (which closes it). */
async function take(stream: AsyncGenerator<StreamedEvent>, n: number): Promise<StreamedEvent[]> {
  const got: StreamedEvent[] = [];
  if (n === 0) return got;
  for await (const e of stream) {
    got.push(e);
    if (got.length === n) break;
  }
  return got;
}

test('streamEvents yields each event with exact bigint ids; a reader that starts again with the last id it handled misses nothing and sees nothing twice', async (t) => {
  const s = await startApp(t);
  const client = clientFor(s, s.token.read);
  const big = 2n ** 63n - 1n;
  await createPlant(s.url, s.token.write, 1n);
  const [first] = await eventually(async () => (await s.store.events.readAfter(null, 1)).length === 1 && s.store.events.readAfter(null, 1), 'the first event');

  const reading = take(streamEvents(client, { after: first!.id }), 2);
  await createPlant(s.url, s.token.write, big);
  await createPlant(s.url, s.token.write, 2n);
  const handled = await reading;
  assert.deepEqual(handled.map((e) => [e.type, e.data.id]), [['newPlant', big], ['newPlant', 2n]]);
  assert.equal(typeof handled[0]!.data.version, 'bigint');

  // Stopped; meanwhile two more; started again with the last id handled.
  for (const id of [3n, 4n]) await createPlant(s.url, s.token.write, id);
  const again = streamEvents(client, { after: handled.at(-1)!.id, types: ['newPlant', 'plantDeleted'] });
  const missed = take(again, 3);
  assert.equal((await fetch(`${s.url}/plants/3`, { method: 'DELETE', headers: { authorization: `Bearer ${s.token.write}` } })).status, 204);
  assert.deepEqual((await missed).map((e) => [e.type, e.data.id]), [['newPlant', 3n], ['newPlant', 4n], ['plantDeleted', 3n]]);
});

test('streamEvents reconnects by itself with Last-Event-ID when its server stops and another starts on the same address', async (t) => {
  const { databaseUrl, token } = await databaseWithToken(t);
  const port = await freePort();
  const env = { DATABASE_URL: databaseUrl, BOOTSTRAP_TOKEN: 'false', PORT: String(port) };
  let server = await spawnServer(t, env);
  const client = clientFor(server.url, token);
  const retries: { status?: number; error?: unknown; delayMs: number }[] = [];
  const stop = new AbortController();
  t.after(() => stop.abort());
  // From a known event, so that nothing depends on when the stream opened.
  await createPlant(server.url, token, 999n);
  const [first] = await eventually(async () => {
    const page = (await (await fetch(`${server.url}/events`, { headers: { authorization: `Bearer ${token}` } })).json()) as { id: string }[];
    return page.length === 1 && page;
  }, 'the first event');
  const got: StreamedEvent[] = [];
  const following = (async () => {
    // The pauses are the client's decision; the test does not wait them out: a pause lasts until something
    // listens on the address again.
    const listening = () => eventually(async () => !(await refused(port)), 'a server on the address again', 20_000, 20).then(() => {}, () => {});
    const options = { after: first!.id, signal: stop.signal, onRetry: (r: (typeof retries)[number]) => retries.push(r), sleep: listening };
    for await (const e of streamEvents(client, options)) got.push(e);
  })();
  await createPlant(server.url, token, 1000n);
  await eventually(() => got.length === 1, 'the stream carries the event after the first');
  server.proc.kill('SIGTERM');
  assert.equal(await server.exited, 0);
  server = await spawnServer(t, env);
  for (const id of [1n, 2n]) await createPlant(server.url, token, id);
  await eventually(() => got.length === 3, () => `the two events written while it was away (${got.length - 1})`);
  assert.deepEqual(got.map((e) => e.data.id), [1000n, 1n, 2n]);
  assert.ok(retries.length >= 1, 'it paused before reconnecting');
  stop.abort();
  await following;
});

test('streamEvents waits Retry-After when refused (429 over the token\'s streams), and throws on a cursor the service refuses', async (t) => {
  const s = await startApp(t, { config: { eventsMaxStreamsPerToken: 1 } });
  const client = clientFor(s, s.token.read);
  const holding = new AbortController();
  const held = take(streamEvents(client, { signal: holding.signal }), 1).catch(() => []);
  await eventually(async () => (await fetch(`${s.url}/events`, { headers: { authorization: `Bearer ${s.token.read}`, accept: 'text/event-stream' } })).status === 429, 'the token\'s one stream open');
  const pauses: number[] = [];
  const second = new AbortController();
  for await (const _ of streamEvents(client, { signal: second.signal, random: () => 0, sleep: async (ms) => {
    pauses.push(ms);
    second.abort();
  } })) void _;
  assert.deepEqual(pauses, [30_000], 'Retry-After: 30');
  holding.abort();
  await held;

  await assert.rejects(
    async () => {
      for await (const _ of streamEvents(client, { after: 'msg_AAAAAAAAAAAAAAAAAAAAAA' })) void _;
    },
    (err: Error & { status?: number }) => err.name === 'PlantStoreError' && err.status === 400,
  );
});
