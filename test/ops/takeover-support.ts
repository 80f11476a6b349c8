// The users of a server being upgraded, for the takeover tests: writers posting new plants, readers getting them
// back, event stream readers that resume with Last-Event-ID whenever their stream ends, and a webhook receiver.
// Each keeps what it saw, so a test can say afterwards that nothing failed, was lost, missed or repeated.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { TestContext } from 'node:test';
import { openStore } from '../../src/storage/open-store.js';
import { runLoad, summarize, type LoadResult } from '../helpers/load.js';
import { openStream } from '../helpers/events.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { addSubscription } from '../helpers/webhooks.js';
import { eventually } from '../helpers/sleep.js';

/** A receiver subscribed to every event of the database at `databaseUrl` (made before any server runs). */
export async function subscribedReceiver(t: TestContext, databaseUrl: string): Promise<Receiver> {
  let secret = '';
  const rx = await startReceiver(t, () => secret);
  const { store } = await openStore(databaseUrl);
  secret = (await addSubscription(store, rx.url, 'wh_takeover')).secret;
  await store.close();
  return rx;
}

export interface Users {
  /** The writers' outcomes (runLoad's). */
  readonly writes: LoadResult;
  /** Reads answered 200, and every other outcome of a read by status or error code. */
  readonly reads: { ok: number; failed: Map<string, number> };
  /** Each stream reader's event ids in the order received, across its reconnections, and how often it reconnected. */
  readonly streams: { ids: string[]; streams: number; failures: string[] }[];
  /** Stops the writers and readers, lets each stream reader catch up with the feed (`url`), then stops it. */
  stop(url: string): Promise<void>;
}

/**
 * Starts the users on `port` (127.0.0.1): `writers` clients each posting a new plant every `pauseMs`, as many
 * readers reading one back, and `streamReaders` readers of the event stream.
 */
export function startUsers(options: { port: number; token: string; writers: number; streamReaders: number; pauseMs: number; firstId: bigint }): Users {
  const { port, token } = options;
  let stopped = false;
  let stopWriting = false;
  const writes: LoadResult = { ok: new Map(), statuses: new Map(), errors: new Map(), sent: 0 };
  const writing = runLoad({ port, token, clients: options.writers, firstId: options.firstId, until: () => stopWriting, result: writes, pauseMs: options.pauseMs });
  const reads = { ok: 0, failed: new Map<string, number>() };
  // A client that heeds the server's `Keep-Alive: timeout=` (letting an idle connection go a second before the
  // server would close it), as undici does: Node's agent does so only when given a timeout of its own. FIFO:
  // each pooled connection is used in turn, so none sits idle to the end of its keep-alive timeout, where a
  // client whose event loop lags more than that second races the server closing it (as in any keep-alive
  // expiry, takeover or not).
  const agent = new http.Agent({ keepAlive: true, timeout: 60_000, scheduling: 'fifo' });
  const read = (id: bigint) =>
    new Promise<string>((resolve) => {
      const req = http.get({ host: '127.0.0.1', port, path: `/plants/${id}`, agent, headers: { authorization: `Bearer ${token}` } }, (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        // A failure is kept with its Error body's code, which says where it came from.
        res.on('end', () => resolve(res.statusCode === 200 || res.statusCode === 404 ? String(res.statusCode) : `${res.statusCode} ${body.slice(0, 200)}`));
      });
      // Whether the request went on a reused connection tells a keep-alive race from a connection reset at once.
      req.on('error', (err: NodeJS.ErrnoException) => resolve(`${err.code ?? err.message} on a ${req.reusedSocket ? 'reused' : 'new'} connection`));
    });
  const reader = async () => {
    while (!stopWriting) {
      const acked = [...writes.ok.keys()];
      const id = acked[Math.floor(Math.random() * acked.length)] ?? options.firstId;
      const outcome = await read(id);
      // A plant not yet written (before the first acknowledgement) is a 404, which is no failure.
      if (outcome === '200' || (outcome === '404' && acked.length === 0)) reads.ok++;
      else reads.failed.set(outcome, (reads.failed.get(outcome) ?? 0) + 1);
      await new Promise((r) => setTimeout(r, options.pauseMs));
    }
  };
  const readers = Array.from({ length: options.writers }, reader);
  const streams = Array.from({ length: options.streamReaders }, () => ({ ids: [] as string[], streams: 0, failures: [] as string[] }));
  const following = streams.map(async (seen) => {
    while (!stopped) {
      const last = seen.ids.at(-1);
      let stream;
      try {
        stream = await openStream(`http://127.0.0.1:${port}`, token, last ? { 'last-event-id': last } : {});
      } catch (err) {
        seen.failures.push(String((err as Error).cause ?? err));
        continue;
      }
      if (stream.status !== 200) {
        seen.failures.push(`${stream.status} ${stream.error?.message}`);
        continue;
      }
      seen.streams++;
      const taken = { n: 0 };
      const copy = () => {
        for (; taken.n < stream.messages.length; taken.n++) seen.ids.push(stream.messages[taken.n]!.id!);
      };
      const timer = setInterval(copy, 20);
      const whenStopped = eventually(() => stopped, 'stopped', 600_000, 20).then(() => stream.close());
      const how = await stream.ended.catch((err: unknown) => `failed: ${String((err as Error).cause ?? err)}`);
      clearInterval(timer);
      copy();
      void whenStopped;
      // The server ending a stream is what a handover does; an error cutting it is not.
      if (how !== 'ended' && how !== 'closed') seen.failures.push(how);
    }
  });
  return {
    writes,
    reads,
    streams,
    async stop(url) {
      stopWriting = true;
      await Promise.all([writing, ...readers]);
      agent.destroy();
      const last = (await feedIds(url, token)).at(-1);
      await eventually(() => streams.every((s) => s.ids.at(-1) === last), 'every stream reader at the end of the feed', 15_000, 20).catch(() => {});
      stopped = true;
      await Promise.all(following);
    },
  };
}

/** Every event id of the feed, in feed order. */
export async function feedIds(url: string, token: string): Promise<string[]> {
  const ids: string[] = [];
  let next: string | undefined = `${url}/events?limit=100`;
  while (next) {
    const res: Response = await fetch(next, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(res.status, 200);
    for (const e of (await res.json()) as { id: string }[]) ids.push(e.id);
    const link = /<([^>]+)>;\s*rel="next"/.exec(res.headers.get('link') ?? '');
    next = link ? new URL(link[1]!, url).href : undefined;
  }
  return ids;
}

/**
 * What the users saw, judged: no request failed (no 5xx, 429, reset or refused connection), every stream reader
 * got every event once and in order, and the receiver got every event once.
 */
export async function assertNothingFailedOrLost(users: Users, url: string, token: string, rx: Receiver): Promise<string> {
  const { writes, reads } = users;
  assert.deepEqual([...writes.statuses.keys()], [], `writes answered other than 200: ${summarize(writes)}`);
  assert.deepEqual([...writes.errors.keys()], [], `writes without an answer: ${summarize(writes)}`);
  assert.deepEqual(Object.fromEntries(reads.failed), {}, 'reads that failed');
  const feed = await feedIds(url, token);
  assert.ok(feed.length >= writes.ok.size, `the feed holds ${feed.length} events for ${writes.ok.size} writes`);
  for (const [i, s] of users.streams.entries()) {
    assert.deepEqual(s.failures, [], `stream reader ${i}: streams that failed`);
    assert.equal(new Set(s.ids).size, s.ids.length, `stream reader ${i} got an event twice`);
    // A stream opened without Last-Event-ID starts with the events after it opened; from there on, each reader
    // saw the rest of the feed, in order, none missed or repeated.
    const from = feed.indexOf(s.ids[0] ?? '');
    assert.ok(from >= 0 && from < feed.length / 2, `stream reader ${i} began at event ${from} of ${feed.length}`);
    assert.deepEqual(s.ids, feed.slice(from), `stream reader ${i} missed, repeated or reordered events`);
  }
  await rx.until((r) => r.byId.size >= feed.length, 20_000).catch(() => {});
  assert.deepEqual(rx.problems, []);
  assert.deepEqual(feed.filter((id) => !rx.byId.has(id)), [], 'events never delivered');
  assert.equal(rx.requests.length, rx.byId.size, 'deliveries sent twice');
  return `${summarize(writes)}; reads ok=${reads.ok}; streams ${users.streams.map((s) => `${s.ids.length} events over ${s.streams} streams`).join(', ')}; deliveries ${rx.byId.size}`;
}
