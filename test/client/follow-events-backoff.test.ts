// followEvents never spins: against a real service whose waiting places are taken it waits Retry-After on
// 429 and 503, backs off (bounded, growing) after failures in a row and after empty answers that came before
// their wait was up, and goes on once events come. Its pauses go through an injected sleep and clock.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createPlantStoreClient, followEvents, type FeedEvent } from '@plant-store/client';
import { startApp, type TestApp } from '../helpers/app.js';
import { eventsWaiting } from '../helpers/events.js';
import { freePort } from '../helpers/ports.js';

/** A client whose every answer is recorded: status and Retry-After. */
function recordingClient(s: TestApp, token: string) {
  const answers: { status: number; retryAfter: string | null }[] = [];
  const client = createPlantStoreClient({
    baseUrl: s.url,
    token,
    fetch: async (request: Request) => {
      const res = await fetch(request);
      answers.push({ status: res.status, retryAfter: res.headers.get('retry-after') });
      return res;
    },
  });
  return { client, answers };
}

/**
 * The pauses followEvents takes on a clock that each pause moves, until it has taken `count` of them
 * (random fixed at 0.5, so a pause is three quarters of its back-off).
 */
async function pausesOf(client: Parameters<typeof followEvents>[0], options: { after?: string; wait?: number }, count: number): Promise<number[]> {
  const pauses: number[] = [];
  const controller = new AbortController();
  let clock = 0;
  for await (const _ of followEvents(client, {
    ...options,
    signal: controller.signal,
    random: () => 0.5,
    now: () => clock,
    sleep: async (ms) => {
      pauses.push(ms);
      clock += ms;
      if (pauses.length === count) controller.abort();
    },
  })) void _;
  return pauses;
}

test('followEvents waits Retry-After on 429 and 503, backs off after failures and early empty answers, and never re-polls in a tight loop', async (t) => {
  const s = await startApp(t, { config: { eventsMaxWaiting: 1, eventsMaxWaitingPerToken: 1 } });
  const waiting = await eventsWaiting(s);
  assert.equal((await s.postPlant({ id: 1, name: 'fern' })).status, 200);
  await s.sequencer.runOnce();
  const first = ((await (await fetch(`${s.url}/events`, { headers: { authorization: `Bearer ${s.token.read}` } })).json()) as { id: string }[])[0]!.id;
  // The read token's one place, and the process's only one, is taken.
  const holder = fetch(`${s.url}/events?after=${first}&wait=30`, { headers: { authorization: `Bearer ${s.token.read}` } });
  await waiting.is(1);
  // The jitter's draw is fixed: each pause is 3/4 of the back-off's ceiling, which starts at 1 s and doubles to 30 s.
  const random = () => 0.5;

  // 429 (the token's cap): each pause is the answer's Retry-After; once the place is free, the next event comes.
  {
    const { client, answers } = recordingClient(s, s.token.read);
    const pauses: number[] = [];
    let clock = 0;
    const controller = new AbortController();
    const seen: FeedEvent[] = [];
    for await (const e of followEvents(client, {
      after: first,
      signal: controller.signal,
      random,
      now: () => clock,
      sleep: async (ms) => {
        pauses.push(ms);
        clock += ms;
        if (pauses.length === 3) {
          // The holder is answered with the new event, and its place is free.
          assert.equal((await s.postPlant({ id: 2, name: 'moss' })).status, 200);
          assert.equal((await holder).status, 200);
          await waiting.is(0);
        }
      },
    })) {
      seen.push(e);
      controller.abort();
    }
    assert.deepEqual(seen.map((e) => e.data.id), [2n]);
    assert.deepEqual(answers.map((a) => a.status), [429, 429, 429, 200]);
    for (const [i, ms] of pauses.entries()) {
      const retryAfter = Number(answers[i]!.retryAfter);
      assert.ok(retryAfter >= 25 && retryAfter <= 30, `Retry-After ${retryAfter}`);
      assert.equal(ms, retryAfter * 1000);
    }
  }

  // 503 (the process's cap, taken by another token's wait): Retry-After is 1 s, and the back-off grows past it.
  const latest = ((await (await fetch(`${s.url}/events?after=${first}`, { headers: { authorization: `Bearer ${s.token.read}` } })).json()) as { id: string }[])[0]!.id;
  const other = fetch(`${s.url}/events?after=${latest}&wait=30`, { headers: { authorization: `Bearer ${s.token.read}` } });
  await waiting.is(1);
  const grows = [1_000, 1_500, 3_000, 6_000, 12_000, 22_500, 22_500];
  {
    const { client, answers } = recordingClient(s, s.token.all);
    const pauses = await pausesOf(client, { after: latest }, grows.length);
    assert.deepEqual(pauses, grows);
    assert.equal(answers.length, grows.length);
    for (const a of answers) assert.deepEqual(a, { status: 503, retryAfter: '1' });
  }

  // wait=0 asks for no wait, so the answer is an empty page at once: the pauses grow as after failures.
  {
    const { client, answers } = recordingClient(s, s.token.all);
    const pauses = await pausesOf(client, { after: latest, wait: 0 }, grows.length);
    assert.deepEqual(pauses, [750, ...grows.slice(1)]);
    assert.deepEqual(answers.map((a) => a.status), grows.map(() => 200));
  }

  assert.equal((await s.postPlant({ id: 3, name: 'ivy' })).status, 200);
  assert.equal((await other).status, 200);
});

test('followEvents retries a service it cannot reach with the same growing pauses, and tells onRetry of each', async () => {
  const client = createPlantStoreClient({ baseUrl: `http://127.0.0.1:${await freePort()}` });
  const pauses: number[] = [];
  const told: { error?: unknown; delayMs: number }[] = [];
  const controller = new AbortController();
  for await (const _ of followEvents(client, {
    signal: controller.signal,
    random: () => 0.5,
    backoff: { initialMs: 200, maxMs: 1_000 },
    onRetry: (info) => told.push(info),
    sleep: async (ms) => {
      pauses.push(ms);
      if (pauses.length === 5) controller.abort();
    },
  })) void _;
  assert.deepEqual(pauses, [150, 300, 600, 750, 750]);
  assert.deepEqual(told.map((i) => [i.delayMs, (i.error as Error).name]), pauses.map((ms) => [ms, 'TypeError']));
});
