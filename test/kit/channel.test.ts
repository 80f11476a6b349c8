// The request/reply channel (src/kit/channel.ts), seen from the caller's side over a real MessagePort pair and an
// IPC channel stood in for: a reply reaches its own caller in any order, a deadline fails only its call, the
// carrier closing fails every waiting call and every later one, a call that cannot be sent gets its fallback,
// and messages that are not the channel's are left to their own listeners.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { MessageChannel } from 'node:worker_threads';
import { createChannel, ipcCarrier, threadCarrier, type Envelope, type Why } from '../../src/kit/channel.js';

type Remote = {
  echo(x: bigint): bigint;
  /** Answers once `release(key)` is called. */
  held(key: string): string;
  boom(): never;
  count(): number;
};

/** Two ends of a MessageChannel: `caller` calls what `answerer` answers. */
function pair(t: TestContext) {
  const { port1, port2 } = new MessageChannel();
  t.after(() => port1.close());
  const gates = new Map<string, (v: string) => void>();
  let counted = 0;
  createChannel<Record<never, never>, Remote>(threadCarrier(port2), {
    handlers: {
      echo: (x) => x,
      held: (key) => new Promise<string>((resolve) => gates.set(key, resolve)),
      boom: () => {
        throw new Error('it broke');
      },
      count: () => ++counted,
    },
  });
  /** Answers the held call `key` once it arrived. */
  const release = async (key: string, value: string) => {
    while (!gates.has(key)) await new Promise((r) => setImmediate(r));
    gates.get(key)!(value);
  };
  return { port1, port2, release, counted: () => counted };
}

test('each reply reaches its own caller, in any order; bigints cross as they are', async (t) => {
  const { port1, release } = pair(t);
  const ch = createChannel<Remote>(threadCarrier(port1));
  const a = ch.request('held', 'a');
  const b = ch.request('held', 'b');
  const big = ch.request('echo', 2n ** 64n);
  assert.equal(await big, 2n ** 64n);
  await release('b', 'second');
  await release('a', 'first');
  assert.deepEqual(await Promise.all([a, b]), ['first', 'second']);
  assert.equal(ch.pending, 0);
});

test('a deadline fails only its own call; its late reply is dropped', async (t) => {
  const { port1, release } = pair(t);
  const whys: Why[] = [];
  const ch = createChannel<Remote>(threadCarrier(port1), {
    calls: {
      held: {
        timeoutMs: 30,
        fallback: (why) => {
          whys.push(why);
          return 'fell back';
        },
      },
    },
  });
  const late = ch.request('held', 'late');
  const other = ch.request('echo', 1n);
  // Holds the test's event loop: the channel's deadline timers never hold a process open.
  const hold = setTimeout(() => {}, 10_000);
  assert.equal(await late, 'fell back');
  clearTimeout(hold);
  assert.deepEqual(whys, ['timeout']);
  assert.equal(await other, 1n);
  await release('late', 'too late');
  assert.equal(await ch.request('echo', 2n), 2n, 'the late reply disturbed nothing');
  assert.equal(ch.pending, 0);
});

test('a call the other side fails rejects with its message, or is answered by the fallback', async (t) => {
  const { port1 } = pair(t);
  const plain = createChannel<Remote>(threadCarrier(port1));
  await assert.rejects(plain.request('boom'), /it broke/);
  const { port1: other } = pair(t);
  const kind = createChannel<Remote>(threadCarrier(other), { rule: { fallback: (why, err) => { throw new Error(`${why}: ${err.message}`); } } });
  await assert.rejects(kind.request('boom'), /^Error: failed: it broke$/);
});

test('the carrier closing fails every waiting call, and every later one, by the rule', async (t) => {
  const { port1, port2 } = pair(t);
  const closed: string[] = [];
  const ch = createChannel<Remote>(threadCarrier(port1, 'the test port'), {
    rule: { fallback: (why, err) => { throw Object.assign(new Error(why), { cause: err }); } },
    closed: (err) => closed.push(err.message),
  });
  const waiting = [ch.request('held', 'x'), ch.request('held', 'y')];
  assert.equal(ch.pending, 2);
  port2.close();
  for (const call of waiting) await assert.rejects(call, (err: Error) => err.message === 'closed' && /the test port closed its port/.test((err.cause as Error).message));
  assert.equal(ch.pending, 0);
  await assert.rejects(ch.request('echo', 1n), /closed/);
  assert.equal(ch.notify('count'), false);
  assert.deepEqual(closed, ['the test port closed its port']);
});

test('a call that cannot be sent gets its fallback at once; a notify sends no reply', async () => {
  const ipc = new EventEmitter() as EventEmitter & { connected: boolean; send: (m: unknown) => boolean; sent: unknown[] };
  ipc.connected = false;
  ipc.sent = [];
  ipc.send = (m) => (ipc.sent.push(m), true);
  const ch = createChannel<Remote, { ping(): string }>(ipcCarrier(ipc), {
    handlers: { ping: () => 'pong' },
    calls: { count: { timeoutMs: 60_000, fallback: (why) => (why === 'unsent' ? -1 : -2) } },
  });
  assert.equal(await ch.request('count'), -1);
  await assert.rejects(ch.request('echo', 1n), /echo could not be sent/);
  assert.equal(ch.pending, 0);
  assert.deepEqual(ipc.sent, []);

  ipc.connected = true;
  ipc.emit('message', { rpc: 0, m: 'ping', a: undefined } satisfies Envelope);
  assert.deepEqual(ipc.sent, [], 'a call with no reply wanted was answered');
  ipc.emit('message', { rpc: 5, m: 'ping', a: undefined } satisfies Envelope);
  assert.deepEqual(ipc.sent, [{ rpc: -5, r: 'pong' }]);
  ipc.emit('message', { rpc: 6, m: 'nothing', a: undefined });
  assert.deepEqual(ipc.sent.at(-1), { rpc: -6, e: 'no method nothing' });
});

test("messages that are not the channel's still reach their own listeners, and the channel ignores them", async () => {
  const ipc = new EventEmitter() as EventEmitter & { connected: boolean; send: (m: unknown) => boolean; sent: unknown[] };
  ipc.connected = true;
  ipc.sent = [];
  ipc.send = (m) => (ipc.sent.push(m), true);
  const heard: unknown[] = [];
  ipc.on('message', (m) => heard.push(m));
  const ch = createChannel<Remote>(ipcCarrier(ipc));
  const call = ch.request('echo', 3n);
  ipc.emit('message', { other: 'news' });
  ipc.emit('message', 'plain text');
  ipc.emit('message', { rpc: -(ipc.sent[0] as { rpc: number }).rpc, r: 3n });
  assert.equal(await call, 3n);
  assert.equal(heard.length, 3);
  assert.deepEqual(heard.slice(0, 2), [{ other: 'news' }, 'plain text']);
  // An IPC channel that disconnects fails what waits.
  const gone = ch.request('echo', 4n);
  ipc.emit('disconnect');
  await assert.rejects(gone, /the IPC channel closed/);
});
