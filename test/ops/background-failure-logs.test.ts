// What an operator reads when the background services fail: the dispatcher's, the sequencer's and the token
// flush's failures reach the log through the process's observers (observations.ts), each a warn line with its
// component, its text and its fields, as server.ts and the shared writer's primary wire them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createObservers, observationLog } from '../../src/observations/observations.js';
import { createDispatcher } from '../../src/webhooks/dispatcher.js';
import { createSequencer } from '../../src/events/sequencer.js';
import type { ClaimedDelivery, WebhookStore } from '../../src/webhooks/delivery.js';
import type { EventLogStore } from '../../src/events/event-log.js';
import type { SendResult } from '../../src/webhooks/sender.js';
import { createWorkerBackground } from '../../src/process/background.js';
import type { TokenService } from '../../src/auth/token-service.js';
import type { Store } from '../../src/storage/store.js';
import { capturedLogger } from '../helpers/log-lines.js';
import { eventually } from '../helpers/sleep.js';

/** The process's observers with the log subscribed, as server.ts wires them, and the lines it wrote. */
function logged() {
  const { lines, logger } = capturedLogger();
  const observers = createObservers();
  observers.subscribe(observationLog(logger));
  const line = (msg: string) => lines.find((l) => l.msg === msg);
  return { lines, observe: observers.observe, line };
}

const claimed = (n: number): ClaimedDelivery => ({
  deliveryId: `del_${n}`,
  eventId: `evt_${n}`,
  subscriptionId: 'sub_1',
  url: 'http://127.0.0.1:9/hook',
  secret: 'whsec_x',
  payload: '{}',
  eventType: 'newPlant',
  eventCreatedAt: new Date(0),
  format: 'plain',
  attemptCount: 0,
});

/** A webhook store that hands out `deliveries` once, and fails what `fail` names. */
function webhooks(deliveries: ClaimedDelivery[], fail: { claim?: boolean; nextDue?: boolean; record?: boolean }): WebhookStore {
  let left = deliveries;
  return {
    async claimDueDeliveries() {
      if (fail.claim) throw new Error('claim refused');
      const out = left;
      left = [];
      return out;
    },
    async nextDueAt() {
      if (fail.nextDue) throw new Error('due time unread');
      return null;
    },
    async recordAttempt() {
      if (fail.record) throw new Error('record refused');
    },
  } as unknown as WebhookStore;
}

test('the dispatcher says when it could not claim deliveries or read the next due time', async () => {
  const { observe, line } = logged();
  const d = createDispatcher({ store: webhooks([], { claim: true, nextDue: true }), timeoutMs: 1_000, allowedHosts: [], pollMs: 60_000, observe });
  d.start();
  const claim = await eventually(() => line('webhook dispatcher could not claim deliveries; will try again'), 'the claim failure logged');
  const due = await eventually(() => line('webhook dispatcher could not read the next due time'), 'the due time failure logged');
  await d.stop();
  for (const l of [claim, due]) {
    assert.equal(l.level, 40);
    assert.equal(l.component, 'webhooks');
  }
  assert.match(claim.err.message, /claim refused/);
  assert.match(due.err.message, /due time unread/);
});

test('an attempt not recorded and an attempt that crashed are said with their delivery', async () => {
  const { observe, line } = logged();
  const ok = async () => ({ statusCode: 200, error: null, durationMs: 1, retryAfter: null });
  const unrecorded = createDispatcher({ store: webhooks([claimed(1)], { record: true }), timeoutMs: 1_000, allowedHosts: [], sender: ok, observe });
  assert.equal(await unrecorded.runOnce(), 1);
  await unrecorded.stop();
  const crashing = createDispatcher({
    store: webhooks([claimed(2)], {}),
    timeoutMs: 1_000,
    allowedHosts: [],
    sender: async () => {
      throw new Error('sender crashed');
    },
    observe,
  });
  assert.equal(await crashing.runOnce(), 1);
  await crashing.stop();

  const record = line('could not record a webhook attempt')!;
  assert.equal(record.level, 40);
  assert.equal(record.component, 'webhooks');
  assert.match(record.err.message, /record refused/);
  assert.deepEqual([record.deliveryId, record.subscriptionId, record.eventId, record.attempt], ['del_1', 'sub_1', 'evt_1', 1]);
  const crash = line('webhook attempt crashed; its lease will expire and it is sent again')!;
  assert.equal(crash.level, 40);
  assert.equal(crash.component, 'webhooks');
  assert.equal(crash.deliveryId, 'del_2');
  assert.match(crash.err.message, /sender crashed/);
});

test('sends still in flight when the stop grace runs out are said abandoned, with how many', async () => {
  const { observe, line } = logged();
  let started = 0;
  // Answers only when aborted, as the sender does.
  const hang = (_input: unknown, signal?: AbortSignal) =>
    new Promise<SendResult>((resolve) => {
      started++;
      signal?.addEventListener('abort', () => resolve({ statusCode: null, error: 'aborted', durationMs: 0, retryAfter: null }));
    });
  const d = createDispatcher({ store: webhooks([claimed(1), claimed(2)], {}), timeoutMs: 30_000, allowedHosts: [], sender: hang, stopGraceMs: 50, pollMs: 60_000, observe });
  d.start();
  await eventually(() => started === 2, 'both sends started');
  await d.stop();
  const abandoned = line('webhook sends still in flight at shutdown were abandoned; they will be sent again')!;
  assert.equal(abandoned.level, 40);
  assert.equal(abandoned.component, 'webhooks');
  assert.equal(abandoned.inFlight, 2);
});

test('the sequencer says when a sequencing or a retention pass failed', async () => {
  const { observe, line } = logged();
  const events = {
    async sequence() {
      throw new Error('sequence refused');
    },
    async removeOlderThan() {
      throw new Error('removal refused');
    },
  } as unknown as EventLogStore;
  const sequencer = createSequencer({ store: events, retentionMs: 86_400_000, pollMs: 60_000, observe });
  sequencer.start();
  const sequencing = await eventually(() => line('could not sequence events; will try again'), 'the sequencing failure logged');
  const retention = await eventually(() => line('could not remove old events; will try again'), 'the retention failure logged');
  await sequencer.stop();
  for (const l of [sequencing, retention]) {
    assert.equal(l.level, 40);
    assert.equal(l.component, 'events');
  }
  assert.match(sequencing.err.message, /sequence refused/);
  assert.match(retention.err.message, /removal refused/);
});

test('the token flush says when it could not record token use', async () => {
  const { observe, line } = logged();
  const store = { events: { watch: () => () => {} } } as unknown as Store;
  const tokens = {
    async flushLastUsed() {
      throw new Error('flush refused');
    },
  } as unknown as TokenService;
  const services = createWorkerBackground({ store, observe, tokens, deliveriesDue: () => {} });
  services.start();
  // Stopping writes the last-used times once more.
  await services.stop();
  const flush = line('could not record token use')!;
  assert.equal(flush.level, 40);
  assert.equal(flush.component, undefined);
  assert.match(flush.err.message, /flush refused/);
});
