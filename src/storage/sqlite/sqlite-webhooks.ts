// Webhook subscriptions, outbox deliveries and attempts on SQLite. The outbox rows themselves are written by
// SqliteStore's group commit, in the transaction of the plant write; their deliveries by the sequencing pass
// (event-jobs.ts).
//
// A delivery is `pending` until it succeeds, fails for good, or is cancelled. A dispatcher leases due
// pending deliveries (lease_until) in one IMMEDIATE transaction, so two dispatchers never send the same
// delivery at once; a lease that expires (its dispatcher died) makes the delivery due again.
import type Database from 'better-sqlite3';
import { Batcher } from '../batcher.js';
import { withoutSync } from './event-jobs.js';
import { claimedOf, deliveriesOf, subscriptionOf, type AttemptRow, type ClaimRow, type DeliveryRow, type SubscriptionRow } from '../rows.js';
import { settleAttempt } from '../../webhooks/attempt-settlement.js';
import { manualRetry, recoveredRound } from '../../webhooks/delivery-rounds.js';
import { CANCELLED, enabling, newSubscriptionCursor } from '../../webhooks/subscription-cursor.js';
import { pickClaims, type Offer } from '../../webhooks/claim-policy.js';
import type { AttemptOutcome, AttemptRecord, ClaimedDelivery, ClaimRequest, DeliveryRecord, DeliveryStatus, RequeueRequest, RequeueResult, SubscriptionRefusal, WebhookStore, WebhookSubscription } from '../../webhooks/delivery.js';

type Guard = <T>(fn: () => T) => T;
type Statements = ReturnType<SqliteWebhookStore['prepare']>;

interface PendingAttempt {
  deliveryId: string;
  attempt: AttemptRecord;
  outcome: AttemptOutcome;
}

export class SqliteWebhookStore implements WebhookStore {
  private prepared?: Statements;
  /** Attempts that finish together share one transaction. */
  private readonly attempts: Batcher<PendingAttempt, void>;

  constructor(
    private readonly db: Database.Database,
    private readonly guard: Guard,
  ) {
    this.attempts = new Batcher({ commit: async (batch) => this.commitAttempts(batch) });
  }

  /** Runs `fn` with the prepared statements under the store's guard (closed store, driver errors -> 503). */
  private run<T>(fn: (st: Statements) => T): T {
    return this.guard(() => fn(this.statements()));
  }

  /** Prepared statements need the schema, so they are made on first use, after migrating. */
  private statements() {
    return (this.prepared ??= this.prepare());
  }

  private prepare() {
    const db = this.db;
    return {
      insertSubscription: db.prepare(
        // Its cursor as subscription-cursor.ts decided it.
        `INSERT INTO webhook_subscriptions (id, url, description, secret, created_at, disabled_at, disabled_reason, events, format, fanned_through)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      listSubscriptions: db.prepare('SELECT * FROM webhook_subscriptions ORDER BY created_at, rowid'),
      getSubscription: db.prepare('SELECT * FROM webhook_subscriptions WHERE id = ?'),
      deleteSubscription: db.prepare('DELETE FROM webhook_subscriptions WHERE id = ?'),
      cancelPending: db.prepare(
        `UPDATE webhook_deliveries SET status = @status, next_attempt_at = @next, lease_until = NULL, updated_at = @now
         WHERE subscription_id = @sub AND status = 'pending' AND id <> @keep`,
      ),
      disableSubscription: db.prepare(
        'UPDATE webhook_subscriptions SET disabled_at = ?, disabled_reason = ? WHERE id = ? AND disabled_at IS NULL',
      ),
      replaceSecret: db.prepare('UPDATE webhook_subscriptions SET secret = ? WHERE id = ? AND secret = ?'),
      logEnd: db.prepare('SELECT last_position FROM event_log WHERE id = 1').pluck(),
      isDisabled: db.prepare('SELECT disabled_at IS NOT NULL FROM webhook_subscriptions WHERE id = ?').pluck(),
      // What enabling writes, as subscription-cursor.ts decided it.
      enableSubscription: db.prepare(
        `UPDATE webhook_subscriptions SET disabled_at = NULL, disabled_reason = NULL, fan_out_ready = @ready, fanned_through = @cursor
         WHERE id = @id`,
      ),
      activeSubscriptions: db.prepare('SELECT id FROM webhook_subscriptions WHERE disabled_at IS NULL').pluck(),
      // One subscription's oldest due deliveries: pending, next attempt at or before now, no live lease.
      // Served by webhook_deliveries_pending_by_subscription; the leased ones it steps over are few.
      dueOf: db.prepare(
        `SELECT id, next_attempt_at AS due FROM webhook_deliveries
         WHERE subscription_id = ? AND status = 'pending' AND next_attempt_at <= ? AND (lease_until IS NULL OR lease_until <= ?)
         ORDER BY next_attempt_at LIMIT ?`,
      ),
      lease: db.prepare(
        `UPDATE webhook_deliveries SET lease_until = @leaseUntil, updated_at = @now
         WHERE id IN (SELECT value FROM json_each(@ids))`,
      ),
      claimed: db.prepare(
        `SELECT d.id, d.event_id, d.subscription_id, d.attempt_count, s.url, s.secret, s.format, e.payload,
           e.type AS event_type, e.created_at AS event_created_at
         FROM webhook_deliveries d
         JOIN webhook_events e ON e.id = d.event_id
         JOIN webhook_subscriptions s ON s.id = d.subscription_id
         WHERE d.id IN (SELECT value FROM json_each(?))`,
      ),
      deliveryState: db.prepare('SELECT status, subscription_id, next_attempt_at, attempt_count FROM webhook_deliveries WHERE id = ?'),
      // A delivery that settled makes room: the subscription's next deliveries can be made.
      ready: db.prepare('UPDATE webhook_subscriptions SET fan_out_ready = 1 WHERE id = ? AND fan_out_ready = 0'),
      nextAttemptNumber: db.prepare('SELECT coalesce(max(attempt), 0) + 1 FROM webhook_attempts WHERE delivery_id = ?').pluck(),
      insertAttempt: db.prepare(
        'INSERT INTO webhook_attempts (delivery_id, attempt, at, status_code, error, duration_ms) VALUES (?, ?, ?, ?, ?, ?)',
      ),
      // The delivery's new state as settleAttempt decided it; the lease is released.
      settle: db.prepare(
        `UPDATE webhook_deliveries
         SET attempt_count = @count, lease_until = NULL, updated_at = @now, status = @status, next_attempt_at = @next
         WHERE id = @id`,
      ),
      listDeliveries: db.prepare(
        `SELECT id, event_id, subscription_id, status, next_attempt_at, created_at FROM webhook_deliveries
         WHERE subscription_id = ? ORDER BY created_at DESC, rowid DESC LIMIT ?`,
      ),
      getDelivery: db.prepare(
        `SELECT id, event_id, subscription_id, status, next_attempt_at, created_at FROM webhook_deliveries
         WHERE id = ? AND subscription_id = ?`,
      ),
      attemptsOf: db.prepare(
        `SELECT * FROM webhook_attempts WHERE delivery_id IN (SELECT value FROM json_each(?)) ORDER BY delivery_id, attempt`,
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
      requeue: db.prepare(
        `UPDATE webhook_deliveries SET status = @status, attempt_count = @count, next_attempt_at = @next, lease_until = NULL, updated_at = @next
         WHERE id IN (
             SELECT id FROM webhook_deliveries
             WHERE subscription_id = @sub AND created_at >= @since AND status IN (SELECT value FROM json_each(@statuses))
             ORDER BY created_at, rowid LIMIT @limit)`,
      ),
      requeueLeft: db
        .prepare(
          `SELECT EXISTS (SELECT 1 FROM webhook_deliveries
             WHERE subscription_id = @sub AND created_at >= @since AND status IN (SELECT value FROM json_each(@statuses)))`,
        )
        .pluck(),
      // When the next delivery is due: its next attempt, or the end of its lease if one is held.
      nextUnleased: db
        .prepare(
          `SELECT d.next_attempt_at FROM webhook_deliveries d
           JOIN webhook_subscriptions s ON s.id = d.subscription_id AND s.disabled_at IS NULL
           WHERE d.status = 'pending' AND d.lease_until IS NULL
           ORDER BY d.next_attempt_at LIMIT 1`,
        )
        .pluck(),
      nextLeaseEnd: db
        .prepare(
          `SELECT min(max(d.lease_until, d.next_attempt_at)) FROM webhook_deliveries d
           JOIN webhook_subscriptions s ON s.id = d.subscription_id AND s.disabled_at IS NULL
           WHERE d.status = 'pending' AND d.lease_until IS NOT NULL`,
        )
        .pluck(),
    };
  }

  async insertSubscription(
    sub: WebhookSubscription,
    admit: (existing: readonly WebhookSubscription[]) => SubscriptionRefusal | undefined,
  ): Promise<SubscriptionRefusal | undefined> {
    return this.run((st) =>
      // IMMEDIATE: the write lock is held from the look to the insert.
      this.db
        .transaction(() => {
          const refusal = admit((st.listSubscriptions.all() as SubscriptionRow[]).map((r) => subscriptionOf(r)));
          if (refusal) return refusal;
          const cursor = newSubscriptionCursor(st.logEnd.get() as number);
          st.insertSubscription.run(sub.id, sub.url, sub.description, sub.secret, sub.createdAt.getTime(), ms(sub.disabledAt), sub.disabledReason, sub.events.join(' '), sub.format, cursor);
          return undefined;
        })
        .immediate(),
    );
  }

  async listSubscriptions(): Promise<WebhookSubscription[]> {
    return (this.run((st) => st.listSubscriptions.all()) as SubscriptionRow[]).map((r) => subscriptionOf(r));
  }

  async getSubscription(id: string): Promise<WebhookSubscription | undefined> {
    const row = this.run((st) => st.getSubscription.get(id)) as SubscriptionRow | undefined;
    return row ? subscriptionOf(row) : undefined;
  }

  async deleteSubscription(id: string): Promise<boolean> {
    return this.run((st) =>
      this.db
        .transaction(() => {
          if (st.deleteSubscription.run(id).changes === 0) return false;
          this.cancelPending(st, id, '', Date.now());
          return true;
        })
        .immediate(),
    );
  }

  async replaceSecret(id: string, current: string, next: string): Promise<boolean> {
    return this.run((st) => st.replaceSecret.run(next, id, current).changes === 1);
  }

  async enableSubscription(id: string): Promise<boolean> {
    return this.run((st) =>
      this.db
        .transaction(() => {
          const disabled = st.isDisabled.get(id) as number | undefined;
          const change = disabled === undefined ? undefined : enabling({ disabled: disabled === 1 }, st.logEnd.get() as number);
          if (!change) return false;
          st.enableSubscription.run({ id, ready: change.fanOutReady ? 1 : 0, cursor: change.fannedThrough });
          return true;
        })
        .immediate(),
    );
  }

  /** The subscription's pending deliveries but `keep` become what subscription-cursor.ts says. */
  private cancelPending(st: Statements, subscriptionId: string, keep: string, now: number): void {
    st.cancelPending.run({ sub: subscriptionId, keep, now, status: CANCELLED.status, next: CANCELLED.nextAttemptAt });
  }

  async claimDueDeliveries(input: ClaimRequest): Promise<ClaimedDelivery[]> {
    if (input.limit <= 0 || input.perSubscription <= 0) return [];
    const now = input.now.getTime();
    const skip = new Set(input.skipSubscriptions);
    // Each active, unsaturated subscription offers its `per` oldest due deliveries; pickClaims chooses among
    // them. Cost: one index probe per active subscription.
    const claimable = (st: Statements): string[] => {
      const offers: Offer[] = [];
      for (const sub of st.activeSubscriptions.all() as string[]) {
        if (skip.has(sub)) continue;
        for (const d of st.dueOf.all(sub, now, now, input.perSubscription) as { id: string; due: number }[]) {
          offers.push({ id: d.id, subscriptionId: sub, due: d.due });
        }
      }
      return pickClaims(offers, input.limit);
    };
    // Every create wakes the dispatcher, and most looks find nothing (no subscription, or nothing due). Looking
    // first without the write lock keeps those looks from waiting, event loop and all, for the write
    // worker's commit and fsync; what is found is claimed under the lock, decided again there.
    if (this.run((st) => claimable(st)).length === 0) return [];
    const rows = this.run((st) =>
      this.withoutSync(() => this.db
        .transaction(() => {
          const ids = claimable(st);
          if (ids.length === 0) return [];
          const list = JSON.stringify(ids);
          st.lease.run({ leaseUntil: input.leaseUntil.getTime(), now, ids: list });
          return st.claimed.all(list) as ClaimRow[];
        })
        .immediate()),
    );
    return rows.map(claimedOf);
  }

  /**
   * Runs a write whose loss on power failure is harmless without waiting for fsync: a lost lease or attempt
   * record only makes its delivery due again (at-least-once). In WAL mode the commit is still atomic and
   * survives a process crash, and the next synchronous commit (any plant write) makes it durable too.
   * Plants, events, subscriptions, deletes and manual retries stay synchronous=FULL. Measured: an fsync
   * per attempt capped one receiver at about 200 deliveries/s.
   */
  private withoutSync<T>(fn: () => T): T {
    return withoutSync(this.db, fn);
  }

  /**
   * Records the attempt and applies its outcome in one transaction. Attempts that finish together share
   * one commit, like plant creates: the promise resolves once it is committed.
   */
  recordAttempt(deliveryId: string, attempt: AttemptRecord, outcome: AttemptOutcome): Promise<void> {
    return this.attempts.submit({ deliveryId, attempt, outcome });
  }

  private commitAttempts(batch: PendingAttempt[]): void[] {
    // Not fsynced (see withoutSync): after a power loss the last attempts may be unrecorded, and those
    // deliveries are sent again with the same webhook-id, which at-least-once delivery allows. A process
    // crash (kill -9) loses nothing: the commit reached the OS.
    this.run((st) =>
      this.withoutSync(() =>
        this.db
          .transaction(() => {
            for (const p of batch) this.applyAttempt(st, p);
          })
          .immediate(),
      ),
    );
    return new Array<void>(batch.length);
  }

  private applyAttempt(st: Statements, { deliveryId, attempt, outcome }: PendingAttempt): void {
    const state = st.deliveryState.get(deliveryId) as
      | { status: DeliveryStatus; subscription_id: string; next_attempt_at: number | null; attempt_count: number }
      | undefined;
    if (!state) return;
    const at = attempt.at.getTime();
    const number = st.nextAttemptNumber.get(deliveryId) as number;
    st.insertAttempt.run(deliveryId, number, at, attempt.statusCode, attempt.error, Math.max(0, Math.round(attempt.durationMs)));
    const now = Date.now();
    const s = settleAttempt(
      { status: state.status, nextAttemptAt: ms2date(state.next_attempt_at), attemptCount: state.attempt_count },
      outcome,
    );
    st.settle.run({ id: deliveryId, now, status: s.status, next: ms(s.nextAttemptAt), count: s.attemptCount });
    if (s.makesRoom) st.ready.run(state.subscription_id);
    if (s.disableReason !== undefined) {
      st.disableSubscription.run(at, s.disableReason, state.subscription_id);
      this.cancelPending(st, state.subscription_id, deliveryId, now);
    }
  }

  async listDeliveries(subscriptionId: string, limit: number): Promise<DeliveryRecord[]> {
    return this.run((st) => {
      const rows = st.listDeliveries.all(subscriptionId, Math.max(0, Math.floor(limit))) as DeliveryRow[];
      return this.withAttempts(st, rows);
    });
  }

  async getDelivery(subscriptionId: string, deliveryId: string): Promise<DeliveryRecord | undefined> {
    return this.run((st) => {
      const row = st.getDelivery.get(deliveryId, subscriptionId) as DeliveryRow | undefined;
      return row ? this.withAttempts(st, [row])[0] : undefined;
    });
  }

  async retryDelivery(subscriptionId: string, deliveryId: string, now: Date): Promise<boolean> {
    return this.run((st) =>
      this.db
        .transaction(() => {
          const row = st.retryState.get(deliveryId, subscriptionId) as
            | { status: DeliveryStatus; attempt_count: number; lease_until: number | null; active: number }
            | undefined;
          if (!row) return false;
          const round = manualRetry(
            { status: row.status, attemptCount: row.attempt_count, leaseUntil: ms2date(row.lease_until), subscriptionActive: row.active === 1 },
            now,
          );
          if (!round) return false;
          st.startRound.run({ id: deliveryId, status: round.status, count: round.attemptCount, next: round.nextAttemptAt.getTime() });
          return true;
        })
        .immediate(),
    );
  }

  async requeueDeliveries(input: RequeueRequest): Promise<RequeueResult> {
    const params = { sub: input.subscriptionId, since: input.createdSince.getTime(), statuses: JSON.stringify(input.statuses) };
    return this.run((st) =>
      this.db
        .transaction(() => {
          const round = recoveredRound(st.subscriptionActive.get(input.subscriptionId) === 1, input.dueAt);
          const queued = round
            ? st.requeue.run({
                ...params,
                status: round.status,
                count: round.attemptCount,
                next: round.nextAttemptAt.getTime(),
                limit: Math.max(0, Math.floor(input.limit)),
              }).changes
            : 0;
          return { queued, more: st.requeueLeft.get(params) === 1 };
        })
        .immediate(),
    );
  }

  async countPendingDeliveries(): Promise<number> {
    // Served by the partial index webhook_deliveries_due (status = 'pending'): no table scan.
    return this.guard(() => this.db.prepare("SELECT count(*) FROM webhook_deliveries WHERE status = 'pending'").pluck().get()) as number;
  }

  async nextDueAt(): Promise<Date | null> {
    return this.run((st) => {
      const a = st.nextUnleased.get() as number | null | undefined;
      const b = st.nextLeaseEnd.get() as number | null | undefined;
      const times = [a, b].filter((v): v is number => typeof v === 'number');
      return times.length === 0 ? null : new Date(Math.min(...times));
    });
  }

  private withAttempts(st: Statements, rows: DeliveryRow[]): DeliveryRecord[] {
    if (rows.length === 0) return [];
    return deliveriesOf(rows, st.attemptsOf.all(JSON.stringify(rows.map((r) => r.id))) as AttemptRow[]);
  }

}

function ms(d: Date | null): number | null {
  return d ? d.getTime() : null;
}

function ms2date(v: number | null): Date | null {
  return v === null ? null : new Date(v);
}
