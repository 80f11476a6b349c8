// A thread behind a channel (src/kit/thread-link.ts), from the caller's side: the first call starts it, a thread
// that dies fails what waits by the rule and the next call starts another, one that cannot start answers by
// the rule, and close() ends it once it has answered what it was sent. This module is also the thread's code.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isMainThread, threadId, Worker, workerData } from 'node:worker_threads';
import { answerParent, ThreadLink } from '../../src/kit/thread-link.js';
import type { Why } from '../../src/kit/channel.js';

type Methods = { who(): number; die(): void; close(): void };

if (!isMainThread) {
  answerParent<Methods>(() => {
    if ((workerData as { fail?: boolean }).fail) throw new Error('cannot open');
    return {
      who: () => threadId,
      die: () => process.exit(3),
      close: () => {},
    };
  });
} else {
  const link = (fail = false) =>
    new ThreadLink<Methods>(() => new Worker(new URL(import.meta.url), { workerData: { fail } }), 'the test thread', {
      fallback: (why: Why, err: Error) => {
        throw new Error(`${why}: ${err.message}`);
      },
    });

  test('the first call starts the thread; one that dies fails what waits, and the next call starts another', async () => {
    const thread = link();
    const first = await thread.request('who');
    assert.equal(await thread.request('who'), first, 'the same thread answers while it lives');
    await assert.rejects(thread.request('die'), /^Error: closed: the test thread exited \(code 3\)$/);
    const second = await thread.request('who');
    assert.notEqual(second, first);
    await thread.close();
  });

  test('a thread that cannot start answers each call by the rule, and is tried again on the next', async () => {
    const thread = link(true);
    await assert.rejects(thread.request('who'), /^Error: unsent: cannot open$/);
    await assert.rejects(thread.request('who'), /^Error: unsent: cannot open$/);
  });

  test('close() ends the thread after it answered what it was sent', async () => {
    const thread = link();
    const asked = [thread.request('who'), thread.request('who')];
    await thread.request('who');
    const more = thread.request('who');
    await thread.close();
    for (const n of await Promise.all([...asked, more])) assert.equal(typeof n, 'number');
    await thread.close();
  });
}
