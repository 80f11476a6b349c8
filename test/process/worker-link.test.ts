// A worker's link to the primary, over a channel that stands in for the cluster IPC one: write commands are
// answered by their own replies, in the shape the writer made them, placed events reach the feed's listeners, metrics are collected and scraped, and dispatcher
// wakes are coalesced without losing the last one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { createWorkerLink } from '../../src/process/worker-link.js';
import type { MetricsJson } from '../../src/process/cluster-messages.js';
import type { Envelope } from '../../src/kit/channel.js';
import { decodeItems, decodeOutcomes, encodeItems, encodeOutcomes, type WireItems } from '../../src/storage/writer-wire.js';
import { StoreUnavailableError } from '../../src/errors/store-errors.js';
import { resultOf } from '../../src/storage/sqlite/write-commands.js';
import type { PlantWrite } from '../../src/plants/plant.js';

/** A call the worker sent (kit/channel.ts): its id, method and argument. */
type Call = { rpc: number; m: string; a: unknown };

function channel() {
  const ch = new EventEmitter() as EventEmitter & { connected: boolean; send: (m: unknown) => boolean; sent: Call[] };
  ch.connected = true;
  ch.sent = [];
  // Node's send() answers false when the message waits behind others; it still goes.
  ch.send = (m) => (ch.sent.push(m as Call), false);
  /** The primary's reply to call `id`, or its failure. */
  const reply = (id: number, r: unknown) => ch.emit('message', { rpc: -id, r } satisfies Envelope);
  const fail = (id: number, e: string) => ch.emit('message', { rpc: -id, e } satisfies Envelope);
  /** A call of the primary's: `id` 0 wants no reply. */
  const ask = (id: number, m: string) => ch.emit('message', { rpc: id, m, a: undefined } satisfies Envelope);
  return { ch, reply, fail, ask };
}

const plants = (items: PlantWrite[]) => ({ name: 'plants', args: [encodeItems(items)] });

test('commits cross as wire items and each resolves with its own reply, in any order; a failure is a StoreUnavailableError', async () => {
  const { ch, reply } = channel();
  const link = createWorkerLink(ch as never);
  const big = 2n ** 62n + 1n;
  const created: PlantWrite[] = [{ op: 'create', plant: { id: big, name: 'a' } }];
  const first = link.writer.send(plants(created));
  const second = link.writer.send(plants([{ op: 'delete', id: 7n, ifVersion: 3n }]));
  const [m1, m2] = ch.sent;
  assert.deepEqual([m1!.m, m2!.m], ['commit', 'commit']);
  const command = (m: Call) => m.a as { args: [WireItems] };
  assert.deepEqual(decodeItems(command(m1!).args[0]), [{ op: 'create', plant: { id: big, name: 'a' } }]);
  assert.deepEqual(decodeItems(command(m2!).args[0]), [{ op: 'delete', id: 7n, ifVersion: 3n }]);
  reply(m2!.rpc, { ok: false, message: 'disk I/O error', code: 'SQLITE_IOERR' });
  // The batch's outcomes as the writer made them (writer-wire.ts: each one's kind, and its version or plant).
  reply(m1!.rpc, { ok: true, result: encodeOutcomes([{ kind: 'created', version: 9n }]) });
  assert.deepEqual(decodeOutcomes(resultOf<'plants'>(await first)), [{ kind: 'created', version: 9n }]);
  const failed = await second;
  assert.throws(() => resultOf(failed), (err: Error) => err instanceof StoreUnavailableError && (err.cause as { code?: string }).code === 'SQLITE_IOERR');
});

test('with the channel closed a commit fails at once, as unavailable, and nothing is sent', async () => {
  const { ch } = channel();
  ch.connected = false;
  const link = createWorkerLink(ch as never);
  await assert.rejects(link.writer.send(plants([{ op: 'create', plant: { id: 1n, name: 'a' } }])), StoreUnavailableError);
  assert.deepEqual(ch.sent, []);
});

test('placed events reach every watcher until it stops watching', () => {
  const { ch, ask } = channel();
  const link = createWorkerLink(ch as never);
  let a = 0;
  let b = 0;
  const stopA = link.writer.watch(() => a++);
  link.writer.watch(() => b++);
  ask(0, 'placed');
  stopA();
  ask(0, 'placed');
  assert.deepEqual([a, b], [1, 2]);
  assert.deepEqual(ch.sent, [], 'a placed is answered by nothing');
});

test('metrics: a collect is answered with this worker\'s metrics (none before it serves); a scrape resolves with the primary\'s text or rejects', async () => {
  const { ch, reply, fail, ask } = channel();
  const link = createWorkerLink(ch as never);
  ask(1, 'collect');
  link.collectWith(async () => [{ name: 'x', help: 'x', type: 'counter', values: [{ value: 3, labels: {} }], aggregator: 'sum' }] as unknown as MetricsJson);
  ask(2, 'collect');
  await new Promise((r) => setImmediate(r));
  const collected = ch.sent as unknown as { rpc: number; r: MetricsJson }[];
  assert.deepEqual(collected.map((m) => [-m.rpc, m.r.map((x) => x.values[0]?.value)]), [[1, []], [2, [3]]]);

  const scraped = link.scrape();
  const asked = ch.sent.at(-1)!;
  assert.equal(asked.m, 'scrape');
  reply(asked.rpc, 'all of it\n');
  assert.equal(await scraped, 'all of it\n');
  const failed = link.scrape();
  fail(ch.sent.at(-1)!.rpc, 'could not gather the metrics of the workers');
  await assert.rejects(failed, /the primary process did not return the metrics/);
});

test('dispatcher wakes: the first goes at once, those within 20 ms become one at its end, none is lost', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const { ch } = channel();
  const link = createWorkerLink(ch as never);
  const wakes = () => ch.sent.filter((m) => m.m === 'wakeDispatcher' && m.rpc === 0).length;
  link.deliveriesDue();
  link.deliveriesDue();
  link.deliveriesDue();
  assert.equal(wakes(), 1);
  t.mock.timers.tick(20);
  assert.equal(wakes(), 2);
  t.mock.timers.tick(20);
  assert.equal(wakes(), 2, 'nothing was asked in the second gap');
  t.mock.timers.tick(100);
  link.deliveriesDue();
  assert.equal(wakes(), 3);
});

test('a limits question is answered by its own reply; one the primary does not answer in time counts alone (null), and its late reply is dropped', async () => {
  const { ch, reply } = channel();
  const link = createWorkerLink(ch as never);
  const answered = link.limits.countFailure('192.0.2.1');
  const unanswered = link.limits.countFailure('192.0.2.2');
  const [first, second] = ch.sent;
  assert.deepEqual([first, second].map((m) => [m!.m, m!.a]), [['countFailure', '192.0.2.1'], ['countFailure', '192.0.2.2']]);
  const counted = { allowed: true, limit: 30, windowS: 60, remaining: 29, resetS: 60 };
  reply(first!.rpc, counted);
  assert.deepEqual(await answered, counted);
  // Waits out the link's own deadline (1 s of real time): the question resolves null, not never. That timer is
  // unreferenced (it never holds a worker open), so this one holds the test's event loop meanwhile.
  const hold = setTimeout(() => {}, 10_000);
  assert.equal(await unanswered, null);
  clearTimeout(hold);
  reply(second!.rpc, counted);
  ch.connected = false;
  assert.equal(await link.limits.countFailure('192.0.2.3'), null, 'a question that cannot go is answered at once');
});
