// The group-commit batcher on its own, over a committer the test answers by hand: one batch at a time by
// default (what arrives meanwhile goes in the next, together), several at once when the committer hands them
// on to a writer that groups them itself, each item answered with its own outcome, drain() waiting for all.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Batcher, type BatchCommitter } from '../../src/storage/batcher.js';
import { StoreUnavailableError } from '../../src/errors/store-errors.js';

/** A committer whose batches wait until the test answers them (each outcome: the item doubled). */
function heldCommitter() {
  const held: { items: number[]; answer: () => void; fail: () => void }[] = [];
  const committer: BatchCommitter<number, number> = {
    commit: (items) =>
      new Promise((resolve, reject) => held.push({ items, answer: () => resolve(items.map((i) => i * 2)), fail: () => reject(new Error('disk I/O error')) })),
  };
  return { committer, held };
}
const turn = () => new Promise((r) => setImmediate(r));

test('one batch at a time by default: what arrives during a commit waits and goes next, together', async () => {
  const { committer, held } = heldCommitter();
  const b = new Batcher(committer);
  const first = [b.submit(1), b.submit(2)];
  await turn();
  const second = [b.submit(3), b.submit(4)];
  await turn();
  const third = [b.submit(5)];
  await turn();
  assert.deepEqual(held.map((h) => h.items), [[1, 2]]);
  held[0]!.answer();
  assert.deepEqual(await Promise.all(first), [2, 4]);
  await turn();
  assert.deepEqual(held.map((h) => h.items), [[1, 2], [3, 4, 5]]);
  held[1]!.answer();
  assert.deepEqual(await Promise.all([...second, ...third]), [6, 8, 10]);
});

test('with maxInFlight 3, each turn\'s batch goes at once up to 3 unanswered; a failure rejects only its batch; drain waits for all', async () => {
  const { committer, held } = heldCommitter();
  const b = new Batcher(committer, 3);
  const batches: Promise<number>[][] = [];
  for (let n = 0; n < 4; n++) {
    batches.push([b.submit(10 * n + 1), b.submit(10 * n + 2)]);
    await turn();
  }
  assert.deepEqual(held.map((h) => h.items), [[1, 2], [11, 12], [21, 22]], 'the fourth waits for room');
  let drained = false;
  const drain = b.drain().then(() => (drained = true));
  held[1]!.fail();
  await assert.rejects(Promise.all(batches[1]!), (err: Error) => err instanceof StoreUnavailableError && /disk I\/O error/.test(String((err.cause as Error).message)));
  await turn();
  assert.deepEqual(held.map((h) => h.items).at(-1), [31, 32], 'room made: the fourth went');
  held[0]!.answer();
  held[2]!.answer();
  assert.deepEqual(await Promise.all([...batches[0]!, ...batches[2]!]), [2, 4, 42, 44]);
  assert.equal(drained, false, 'drained while a batch was still unanswered');
  held[3]!.answer();
  assert.deepEqual(await Promise.all(batches[3]!), [62, 64]);
  await drain;
  assert.equal(drained, true);
});
