// The count lane of Prefer: count=exact: one count at a time per process, with bounded waiting. A count that
// may not wait is refused at once with an Error body and Retry-After: 429 past the token's own share
// (COUNTS_MAX_WAITING_PER_TOKEN), 503 past the instance's (COUNTS_MAX_WAITING); every count answered is exact.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { errorOf, startApp, type TestApp } from '../helpers/app.js';
import { eventually } from '../helpers/sleep.js';

const PLANTS = 5;

async function seeded(t: Parameters<typeof startApp>[0]): Promise<TestApp> {
  const s = await startApp(t, { config: { countsMaxWaiting: 1, countsMaxWaitingPerToken: 1 } });
  for (let id = 1; id <= PLANTS; id++) assert.equal((await s.postPlant({ id, name: `Fern ${id}` })).status, 200);
  return s;
}

/** Counted lists sent at once, one per token given: their statuses, each answer checked. */
async function burst(s: TestApp, tokens: string[], refusal: { status: number; setting: RegExp }): Promise<number[]> {
  const answers = await Promise.all(tokens.map((token) => fetch(`${s.url}/plants?q=fern&limit=2`, { headers: { authorization: `Bearer ${token}`, prefer: 'count=exact' } })));
  for (const res of answers) {
    if (res.status === 200) {
      assert.equal(res.headers.get('x-total-count'), String(PLANTS));
      await res.arrayBuffer();
      continue;
    }
    assert.equal(res.status, refusal.status);
    assert.equal(res.headers.get('retry-after'), '1');
    assert.match((await errorOf(res)).message, refusal.setting);
  }
  return answers.map((r) => r.status);
}

test('counts of one token past its waiting share are refused 429 with Retry-After; the others are exact', async (t) => {
  const s = await seeded(t);
  const token = s.token.read;
  await eventually(async () => (await burst(s, Array(8).fill(token), { status: 429, setting: /COUNTS_MAX_WAITING_PER_TOKEN/ })).includes(429), 'a 429 among the counts');
});

test('counts of several tokens past the instance\'s waiting places are refused 503 with Retry-After', async (t) => {
  const s = await seeded(t);
  const tokens = await Promise.all(Array.from({ length: 6 }, async (_, i) => (await s.tokens.create({ name: `counter ${i}`, scopes: ['plants:read'] })).secret));
  await eventually(async () => (await burst(s, tokens, { status: 503, setting: /COUNTS_MAX_WAITING\)/ })).includes(503), 'a 503 among the counts');
});
