// Where a subscription's cursor starts and what its pending deliveries become (src/webhooks/subscription-cursor.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CANCELLED, enabling, newSubscriptionCursor } from '../../src/webhooks/subscription-cursor.js';

test("a new subscription and a re-enabled one start at the log's end; enabling an enabled one changes nothing", () => {
  assert.equal(newSubscriptionCursor(42), 42);
  assert.equal(newSubscriptionCursor(7n), 7n);
  assert.deepEqual(enabling({ disabled: true }, 42), { fannedThrough: 42, fanOutReady: true });
  assert.equal(enabling({ disabled: false }, 42), undefined);
  assert.deepEqual(CANCELLED, { status: 'cancelled', nextAttemptAt: null });
});
