// The claim rule every engine applies (src/webhooks/claim-policy.ts) and what recording an attempt does
// (src/webhooks/attempt-settlement.ts), as pure functions.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pickClaims } from '../../src/webhooks/claim-policy.js';
import { settleAttempt, settlement } from '../../src/webhooks/attempt-settlement.js';

test('a claim takes the first due delivery of every subscription before the second of any, oldest first within a rank', () => {
  const offers = [
    { id: 'a1', subscriptionId: 'A', due: 1 },
    { id: 'a2', subscriptionId: 'A', due: 2 },
    { id: 'a3', subscriptionId: 'A', due: 3 },
    { id: 'b1', subscriptionId: 'B', due: 5 },
    { id: 'b2', subscriptionId: 'B', due: 6 },
    { id: 'c1', subscriptionId: 'C', due: 4 },
  ];
  assert.deepEqual(pickClaims(offers, 10), ['a1', 'c1', 'b1', 'a2', 'b2', 'a3']);
  assert.deepEqual(pickClaims(offers, 3), ['a1', 'c1', 'b1']);
  // The engine's order of offers does not matter.
  assert.deepEqual(pickClaims([...offers].reverse(), 4), ['a1', 'c1', 'b1', 'a2']);
  assert.deepEqual(pickClaims(offers, 0), []);
  assert.deepEqual(pickClaims([], 5), []);
});

test('deliveries due at the same time are taken in id order', () => {
  const offers = [
    { id: 'z', subscriptionId: 'A', due: 7 },
    { id: 'y', subscriptionId: 'B', due: 7 },
    { id: 'x', subscriptionId: 'A', due: 7 },
  ];
  assert.deepEqual(pickClaims(offers, 3), ['x', 'y', 'z']);
});

test('settling an attempt: success and last failure end the delivery, a retry keeps its time, 410 also disables the subscription', () => {
  const at = new Date(1_000);
  assert.deepEqual(settlement({ status: 'succeeded' }), { status: 'succeeded', nextAttemptAt: null });
  assert.deepEqual(settlement({ status: 'failed' }), { status: 'failed', nextAttemptAt: null });
  assert.deepEqual(settlement({ status: 'pending', nextAttemptAt: at }), { status: 'pending', nextAttemptAt: at });
  assert.deepEqual(settlement({ status: 'disable-subscription', reason: 'gone' }), { status: 'failed', nextAttemptAt: null, disableReason: 'gone' });
});

test('settling an attempt against the row: it always counts; the status moves only from pending, or from cancelled to succeeded', () => {
  const due = new Date(500);
  const at = new Date(1_000);
  const pending = { status: 'pending' as const, nextAttemptAt: due, attemptCount: 2 };
  assert.deepEqual(settleAttempt(pending, { status: 'pending', nextAttemptAt: at }), { status: 'pending', nextAttemptAt: at, attemptCount: 3, makesRoom: false });
  assert.deepEqual(settleAttempt(pending, { status: 'failed' }), { status: 'failed', nextAttemptAt: null, attemptCount: 3, makesRoom: true });
  assert.deepEqual(settleAttempt(pending, { status: 'disable-subscription', reason: 'gone' }), {
    status: 'failed', nextAttemptAt: null, attemptCount: 3, makesRoom: true, disableReason: 'gone',
  });
  const cancelled = { status: 'cancelled' as const, nextAttemptAt: null, attemptCount: 0 };
  assert.deepEqual(settleAttempt(cancelled, { status: 'succeeded' }), { status: 'succeeded', nextAttemptAt: null, attemptCount: 1, makesRoom: true });
  assert.deepEqual(settleAttempt(cancelled, { status: 'failed' }), { status: 'cancelled', nextAttemptAt: null, attemptCount: 1, makesRoom: true });
  assert.deepEqual(settleAttempt(cancelled, { status: 'pending', nextAttemptAt: at }), { status: 'cancelled', nextAttemptAt: null, attemptCount: 1, makesRoom: false });
  const failed = { status: 'failed' as const, nextAttemptAt: due, attemptCount: 5 };
  assert.deepEqual(settleAttempt(failed, { status: 'succeeded' }), { status: 'failed', nextAttemptAt: due, attemptCount: 6, makesRoom: true });
});
