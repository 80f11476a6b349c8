// When a delivery starts again by hand and what it becomes (src/webhooks/delivery-rounds.ts), as pure functions.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { manualRetry, recoveredRound } from '../../src/webhooks/delivery-rounds.js';

const now = new Date(10_000);

test('a manual retry: failed, cancelled or succeeded start a new round, pending without a live lease keeps its round; never leased or disabled', () => {
  const state = { attemptCount: 4, leaseUntil: null, subscriptionActive: true };
  assert.deepEqual(manualRetry({ ...state, status: 'failed' }, now), { status: 'pending', attemptCount: 0, nextAttemptAt: now });
  assert.deepEqual(manualRetry({ ...state, status: 'cancelled' }, now), { status: 'pending', attemptCount: 0, nextAttemptAt: now });
  assert.deepEqual(manualRetry({ ...state, status: 'pending' }, now), { status: 'pending', attemptCount: 4, nextAttemptAt: now });
  assert.deepEqual(manualRetry({ ...state, status: 'pending', leaseUntil: now }, now), { status: 'pending', attemptCount: 4, nextAttemptAt: now });
  assert.equal(manualRetry({ ...state, status: 'pending', leaseUntil: new Date(now.getTime() + 1) }, now), undefined);
  assert.deepEqual(manualRetry({ ...state, status: 'succeeded' }, now), { status: 'pending', attemptCount: 0, nextAttemptAt: now });
  assert.equal(manualRetry({ ...state, status: 'failed', subscriptionActive: false }, now), undefined);
});

test('a recover starts a new round due at the given time, and takes nothing while the subscription is disabled', () => {
  assert.deepEqual(recoveredRound(true, now), { status: 'pending', attemptCount: 0, nextAttemptAt: now });
  assert.equal(recoveredRound(false, now), undefined);
});
