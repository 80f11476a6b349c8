// The webhook outbox's writes on SQLite, as the writer's commands (write-commands.ts) run them: subscriptions,
// claims and attempts, manual retries and requeues, each one IMMEDIATE transaction. The rules are webhooks/'
// (claim-policy.ts, attempt-settlement.ts, delivery-rounds.ts, subscription-cursor.ts); this file holds the
// statements. The port that asks for them is sqlite-webhooks.ts.
import type Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { attemptRequestText, attemptResponseText, type ClaimRow, type SubscriptionRow } from '../rows.js';
import { withoutSync } from './event-jobs.js';
import type { AttemptOutcome, AttemptRecord, ClaimRequest, DeliveryStatus, RequeueRequest, RequeueResult, WebhookSubscription } from '../../webhooks/delivery.js';
import { settleAttempt } from '../../webhooks/attempt-settlement.js';
import { manualRetry, recoveredRound } from '../../webhooks/delivery-rounds.js';
import { CANCELLED, enabling, newSubscriptionCursor } from '../../webhooks/subscription-cursor.js';
import { pickClaims, type Offer } from '../../webhooks/claim-policy.js';

/** An attempt as recordAttempts takes it (webhooks' recorder batches those that finish together). */
export type AttemptWrite = [deliveryId: string, attempt: AttemptRecord, outcome: AttemptOutcome];

/** The subscriptions as the rule saw them: the insert happens only if the writer still finds them so. */
export function subscriptionsSeen(rows: readonly SubscriptionRow[]): string {
  return createHash('sha256').update(JSON.stringify(rows)).digest('base64');
}

/** The due deliveries a claim may take (claim-policy.ts chooses): read without the lock to look, with it to claim. */
export function claimLook(db: Database.Database) {
  const active = db.prepare('SELECT id FROM webhook_subscriptions WHERE disabled_at IS NULL').pluck();
  // One subscription's oldest due deliveries: pending, next attempt at or before now, no live lease.
  // Served by webhook_deliveries_pending_by_subscription; the leased ones it steps over are few.
  const dueOf = db.prepare(
    `SELECT id, next_attempt_at AS due FROM webhook_deliveries
     WHERE subscription_id = ? AND status = 'pending' AND next_attempt_at <= ? AND (lease_until IS NULL OR lease_until <= ?)
     ORDER BY next_attempt_at LIMIT +?`,
  );
  // Each active, unsaturated subscription offers its `per` oldest due deliveries; pickClaims chooses among
  // them. Cost: one index probe per active subscription.
  return (input: ClaimRequest): string[] => {
    const now = input.now.getTime();
    const skip = new Set(input.skipSubscriptions);
    const offers: Offer[] = [];
    for (const sub of active.all() as string[]) {
      if (skip.has(sub)) continue;
      for (const d of dueOf.all(sub, now, now, input.perSubscription) as { id: string; due: number }[]) {
        offers.push({ id: d.id, subscriptionId: sub, due: d.due });
      }
    }
    return pickClaims(offers, input.limit);
  };
}

/** The outbox writes on one connection, prepared together on the first of them. */
export function webhookWrites(db: Database.Database) {
  const st = {
    listSubscriptions: db.prepare('SELECT * FROM webhook_subscriptions ORDER BY created_at, rowid'),
    insertSubscription: db.prepare(
      // Its cursor as subscription-cursor.ts decided it.
      `INSERT INTO webhook_subscriptions (id, url, description, secret, created_at, disabled_at, disabled_reason, events, format, fanned_through)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    deleteSubscription: db.prepare('DELETE FROM webhook_subscriptions WHERE id = ?'),
    cancelPending: db.prepare(
      `UPDATE webhook_deliveries SET status = @status, next_attempt_at = @next, lease_until = NULL, updated_at = @now
       WHERE subscription_id = @sub AND status = 'pending' AND id <> @keep`,
    ),
    disableSubscription: db.prepare('UPDATE webhook_subscriptions SET disabled_at = ?, disabled_reason = ? WHERE id = ? AND disabled_at IS NULL'),
    replaceSecret: db.prepare('UPDATE webhook_subscriptions SET secret = ? WHERE id = ? AND secret = ?'),
    logEnd: db.prepare('SELECT last_position FROM event_log WHERE id = 1').pluck(),
    isDisabled: db.prepare('SELECT disabled_at IS NOT NULL FROM webhook_subscriptions WHERE id = ?').pluck(),
    // What enabling writes, as subscription-cursor.ts decided it.
    enableSubscription: db.prepare(
      `UPDATE webhook_subscriptions SET disabled_at = NULL, disabled_reason = NULL, fan_out_ready = @ready, fanned_through = @cursor
       WHERE id = @id`,
    ),
    lease: db.prepare(`UPDATE webhook_deliveries SET lease_until = @leaseUntil, updated_at = @now WHERE id IN (SELECT value FROM json_each(@ids))`),
    claimed: db.prepare(
      `SELECT d.id, d.event_id, d.subscription_id, d.attempt_count, s.url, s.secret, s.format, e.payload,
         e.type AS event_type, e.created_at AS event_created_at, e.trace_context
       FROM webhook_deliveries d
       JOIN webhook_events e ON e.id = d.event_id
       JOIN webhook_subscriptions s ON s.id = d.subscription_id
       WHERE d.id IN (SELECT value FROM json_each(?))`,
    ),
    deliveryState: db.prepare('SELECT status, subscription_id, next_attempt_at, attempt_count FROM webhook_deliveries WHERE id = ?'),
    // A delivery that settled makes room: the subscription's next deliveries can be made.
    ready: db.prepare('UPDATE webhook_subscriptions SET fan_out_ready = 1 WHERE id = ? AND fan_out_ready = 0'),
    nextAttemptNumber: db.prepare('SELECT coalesce(max(attempt), 0) + 1 FROM webhook_attempts WHERE delivery_id = ?').pluck(),
    insertAttempt: db.prepare('INSERT INTO webhook_attempts (delivery_id, attempt, at, status_code, error, duration_ms, request, response) VALUES (?, ?, ?, ?, ?, ?, ?, ?)'),
    // The delivery's new state as settleAttempt decided it; the lease is released.
    settle: db.prepare(
      `UPDATE webhook_deliveries
       SET attempt_count = @count, lease_until = NULL, updated_at = @now, status = @status, next_attempt_at = @next
       WHERE id = @id`,
    ),
    // What a manual retry reads (delivery-rounds.ts decides): the row and whether its subscription is active.
    retryState: db.prepare(
      `SELECT d.status, d.attempt_count, d.lease_until, s.disabled_at IS NULL AS active
       FROM webhook_deliveries d JOIN webhook_subscriptions s ON s.id = d.subscription_id
       WHERE d.id = ? AND d.subscription_id = ?`,
    ),
    subscriptionActive: db.prepare('SELECT disabled_at IS NULL FROM webhook_subscriptions WHERE id = ?').pluck(),
    // A new round as delivery-rounds.ts decided it, with no lease.
    startRound: db.prepare(
      `UPDATE webhook_deliveries SET status = @status, attempt_count = @count, next_attempt_at = @next, lease_until = NULL, updated_at = @next
       WHERE id = @id`,
    ),
    // The selected deliveries, oldest first (webhook_deliveries_by_subscription), each made what recoveredRound decided.
    // Due 1 ms apart, oldest first and the newest at @next (delivery-rounds.ts: recoveredRound), so the claims
    // take them in the order they were made.
    requeue: db.prepare(
      `UPDATE webhook_deliveries SET status = @status, attempt_count = @count, next_attempt_at = @next - (r.n - r.rn), lease_until = NULL, updated_at = @next
       FROM (SELECT id, row_number() OVER (ORDER BY created_at, o) AS rn, count(*) OVER () AS n FROM (
           SELECT id, created_at, rowid AS o FROM webhook_deliveries
           WHERE subscription_id = @sub AND created_at >= @since AND status IN (SELECT value FROM json_each(@statuses))
           ORDER BY created_at, rowid LIMIT +@limit)) AS r
       WHERE webhook_deliveries.id = r.id`,
    ),
    requeueLeft: db
      .prepare(
        `SELECT EXISTS (SELECT 1 FROM webhook_deliveries
           WHERE subscription_id = @sub AND created_at >= @since AND status IN (SELECT value FROM json_each(@statuses)))`,
      )
      .pluck(),
  };
  const claimable = claimLook(db);
  /** The subscription's pending deliveries but `keep` become what subscription-cursor.ts says. */
  const cancelPending = (sub: string, keep: string, now: number) =>
    st.cancelPending.run({ sub, keep, now, status: CANCELLED.status, next: CANCELLED.nextAttemptAt });
  const applyAttempt = ([deliveryId, attempt, outcome]: AttemptWrite): void => {
    const state = st.deliveryState.get(deliveryId) as
      | { status: DeliveryStatus; subscription_id: string; next_attempt_at: number | null; attempt_count: number }
      | undefined;
    if (!state) return;
    const at = attempt.at.getTime();
    const number = st.nextAttemptNumber.get(deliveryId) as number;
    st.insertAttempt.run(deliveryId, number, at, attempt.statusCode, attempt.error, Math.max(0, Math.round(attempt.durationMs)), attemptRequestText(attempt), attemptResponseText(attempt));
    const now = Date.now();
    const s = settleAttempt({ status: state.status, nextAttemptAt: dateOf(state.next_attempt_at), attemptCount: state.attempt_count }, outcome);
    st.settle.run({ id: deliveryId, now, status: s.status, next: ms(s.nextAttemptAt), count: s.attemptCount });
    if (s.makesRoom) st.ready.run(state.subscription_id);
    if (s.disableReason !== undefined) {
      st.disableSubscription.run(at, s.disableReason, state.subscription_id);
      cancelPending(state.subscription_id, deliveryId, now);
    }
  };
  // IMMEDIATE everywhere: the write lock is held from the first read to the last write.
  const insertSubscription = db.transaction((sub: WebhookSubscription, seen: string): boolean => {
    // The rule (webhooks/) was shown the subscriptions as the caller read them; another write since means it
    // must look again.
    if (subscriptionsSeen(st.listSubscriptions.all() as SubscriptionRow[]) !== seen) return false;
    const cursor = newSubscriptionCursor(st.logEnd.get() as number);
    st.insertSubscription.run(sub.id, sub.url, sub.description, sub.secret, sub.createdAt.getTime(), ms(sub.disabledAt), sub.disabledReason, sub.events.join(' '), sub.format, cursor);
    return true;
  });
  const deleteSubscription = db.transaction((id: string, now: number): boolean => {
    if (st.deleteSubscription.run(id).changes === 0) return false;
    cancelPending(id, '', now);
    return true;
  });
  const enableSubscription = db.transaction((id: string): boolean => {
    const disabled = st.isDisabled.get(id) as number | undefined;
    const change = disabled === undefined ? undefined : enabling({ disabled: disabled === 1 }, st.logEnd.get() as number);
    if (!change) return false;
    st.enableSubscription.run({ id, ready: change.fanOutReady ? 1 : 0, cursor: change.fannedThrough });
    return true;
  });
  // The look is made again under the lock: what the caller saw may have been claimed meanwhile.
  const claim = db.transaction((input: ClaimRequest): ClaimRow[] => {
    const ids = claimable(input);
    if (ids.length === 0) return [];
    const list = JSON.stringify(ids);
    st.lease.run({ leaseUntil: input.leaseUntil.getTime(), now: input.now.getTime(), ids: list });
    return st.claimed.all(list) as ClaimRow[];
  });
  const recordAttempts = db.transaction((attempts: readonly AttemptWrite[]) => {
    for (const a of attempts) applyAttempt(a);
  });
  const retryDelivery = db.transaction((subscriptionId: string, deliveryId: string, now: Date): boolean => {
    const row = st.retryState.get(deliveryId, subscriptionId) as
      | { status: DeliveryStatus; attempt_count: number; lease_until: number | null; active: number }
      | undefined;
    if (!row) return false;
    const round = manualRetry(
      { status: row.status, attemptCount: row.attempt_count, leaseUntil: dateOf(row.lease_until), subscriptionActive: row.active === 1 },
      now,
    );
    if (!round) return false;
    st.startRound.run({ id: deliveryId, status: round.status, count: round.attemptCount, next: round.nextAttemptAt.getTime() });
    return true;
  });
  const requeueDeliveries = db.transaction((input: RequeueRequest): RequeueResult => {
    const params = { sub: input.subscriptionId, since: input.createdSince.getTime(), statuses: JSON.stringify(input.statuses) };
    const round = recoveredRound(st.subscriptionActive.get(input.subscriptionId) === 1, input.dueAt);
    const queued = round
      ? st.requeue.run({ ...params, status: round.status, count: round.attemptCount, next: round.nextAttemptAt.getTime(), limit: Math.max(0, Math.floor(input.limit)) }).changes
      : 0;
    return { queued, more: st.requeueLeft.get(params) === 1 };
  });
  return {
    replaceSecret: st.replaceSecret,
    insertSubscription: (sub: WebhookSubscription, seen: string) => insertSubscription.immediate(sub, seen),
    deleteSubscription: (id: string, now: number) => deleteSubscription.immediate(id, now),
    enableSubscription: (id: string) => enableSubscription.immediate(id),
    // A lost lease or attempt only makes its delivery due again (at-least-once): neither waits for fsync
    // (withoutSync). Measured: an fsync per attempt capped one receiver at about 200 deliveries/s.
    claim: (input: ClaimRequest) => withoutSync(db, () => claim.immediate(input)),
    recordAttempts: (attempts: readonly AttemptWrite[]) => withoutSync(db, () => recordAttempts.immediate(attempts)),
    retryDelivery: (subscriptionId: string, deliveryId: string, now: Date) => retryDelivery.immediate(subscriptionId, deliveryId, now),
    requeueDeliveries: (input: RequeueRequest) => requeueDeliveries.immediate(input),
  };
}

function ms(d: Date | null): number | null {
  return d ? d.getTime() : null;
}

function dateOf(v: number | null): Date | null {
  return v === null ? null : new Date(v);
}
