// Webhook subscriptions, outbox deliveries and attempts on PostgreSQL. The outbox rows themselves are
// written by PgStore's group commit, in the transaction of the plant write that emits them.
//
// Many instances may dispatch from one database: a claim locks due rows with FOR UPDATE SKIP LOCKED and sets
// their lease in the same transaction, so two dispatchers never hold the same delivery; a lease that expires
// (its instance died) makes the delivery due again (at-least-once, same webhook-id).
import type pg from 'pg';
import type { AttemptOutcome, AttemptRecord, ClaimedDelivery, ClaimRequest, DeliveryRecord, DeliveryStatus, RequeueRequest, RequeueResult, SubscriptionRefusal, WebhookStore, WebhookSubscription } from '../../webhooks/delivery.js';
import { guarded, retryingTransaction, transaction } from './pool.js';
import { Batcher } from '../batcher.js';
import { attemptRequestText, attemptResponseText, claimedOf, deliveriesOf, subscriptionOf, type AttemptRow, type ClaimRow, type DeliveryRow, type SubscriptionRow } from '../rows.js';
import { settleAttempt } from '../../webhooks/attempt-settlement.js';
import { manualRetry, recoveredRound } from '../../webhooks/delivery-rounds.js';
import { CANCELLED, enabling, newSubscriptionCursor } from '../../webhooks/subscription-cursor.js';
import { pickClaims } from '../../webhooks/claim-policy.js';
import { pgText, toDbText } from './text.js';

interface PendingAttempt {
  deliveryId: string;
  attempt: AttemptRecord;
  outcome: AttemptOutcome;
}

/**
 * Ids come from URL paths; PostgreSQL text refuses U+0000 with an error (which would be a 503), and no id we
 * issue holds one, so such an id is simply not found.
 */
function possibleId(id: string): boolean {
  return !id.includes('\0');
}

const SQL = {
  // Its cursor as subscription-cursor.ts decided it.
  insertSubscription: `INSERT INTO webhook_subscriptions (id, url, description, secret, created_at, disabled_at, disabled_reason, events, format, fanned_through)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
  logEnd: 'SELECT last_position FROM event_log WHERE id = 1',
  // Held until commit by whoever is adding a subscription: instances add them one at a time.
  lockSubscriptions: 'SELECT pg_advisory_xact_lock(7085608232398170483)',
  listSubscriptions: 'SELECT * FROM webhook_subscriptions ORDER BY created_at, seq',
  getSubscription: 'SELECT * FROM webhook_subscriptions WHERE id = $1',
  deleteSubscription: 'DELETE FROM webhook_subscriptions WHERE id = $1',
  // An attempt locks its delivery, then the subscription (ready, disable): a delete takes the same order, the
  // subscription's pending deliveries in id order first, as attempt batches lock theirs.
  lockPending: `SELECT id FROM webhook_deliveries WHERE subscription_id = $1 AND status = 'pending' ORDER BY id FOR UPDATE`,
  cancelPending: `UPDATE webhook_deliveries SET status = $4, next_attempt_at = $5, lease_until = NULL, updated_at = $1
    WHERE subscription_id = $2 AND status = 'pending' AND id <> $3`,
  disableSubscription: 'UPDATE webhook_subscriptions SET disabled_at = $1, disabled_reason = $2 WHERE id = $3 AND disabled_at IS NULL',
  replaceSecret: 'UPDATE webhook_subscriptions SET secret = $3 WHERE id = $1 AND secret = $2',
  // What enabling reads: the row, locked, and the log's end.
  enablingState: `SELECT s.disabled_at IS NOT NULL AS disabled, (SELECT last_position FROM event_log WHERE id = 1) AS log_end
    FROM webhook_subscriptions s WHERE s.id = $1 FOR UPDATE`,
  // What enabling writes, as subscription-cursor.ts decided it.
  enableSubscription: `UPDATE webhook_subscriptions SET disabled_at = NULL, disabled_reason = NULL, fan_out_ready = $2, fanned_through = $3
    WHERE id = $1`,
  // A delivery that settled makes room: the subscription's next deliveries can be made.
  ready: 'UPDATE webhook_subscriptions SET fan_out_ready = 1 WHERE id = $1 AND fan_out_ready = 0',
  // Each active, unskipped subscription offers its `per` oldest due deliveries that no one else holds:
  // rows locked by a concurrent claim are skipped, and rows it leased fail the lease test once it commits.
  dueOffers: `SELECT c.id, c.subscription_id, c.next_attempt_at AS due
    FROM webhook_subscriptions s
    CROSS JOIN LATERAL (
      SELECT d.id, d.subscription_id, d.next_attempt_at FROM webhook_deliveries d
      WHERE d.subscription_id = s.id AND d.status = 'pending' AND d.next_attempt_at <= $1
        AND (d.lease_until IS NULL OR d.lease_until <= $1)
      ORDER BY d.next_attempt_at LIMIT $2
      FOR UPDATE OF d SKIP LOCKED) c
    WHERE s.disabled_at IS NULL AND s.id <> ALL ($3::text[])`,
  lease: `UPDATE webhook_deliveries d SET lease_until = $2, updated_at = $3
    FROM webhook_events e, webhook_subscriptions s
    WHERE d.id = ANY ($1::text[]) AND e.id = d.event_id AND s.id = d.subscription_id
    RETURNING d.id, d.event_id, d.subscription_id, d.attempt_count, s.url, s.secret, s.format, e.payload,
      e.type AS event_type, e.created_at AS event_created_at, e.trace_context`,
  deliveryState: 'SELECT status, subscription_id, next_attempt_at, attempt_count FROM webhook_deliveries WHERE id = $1 FOR UPDATE',
  insertAttempt: `INSERT INTO webhook_attempts (delivery_id, attempt, at, status_code, error, duration_ms, request, response)
    SELECT $1, coalesce(max(attempt), 0) + 1, $2, $3, $4, $5, $6, $7 FROM webhook_attempts WHERE delivery_id = $1`,
  // The delivery's new state as settleAttempt decided it; the lease is released.
  settle: `UPDATE webhook_deliveries
    SET attempt_count = $5, lease_until = NULL, updated_at = $2, status = $3, next_attempt_at = $4
    WHERE id = $1`,
  listDeliveries: `SELECT id, event_id, subscription_id, status, next_attempt_at, created_at FROM webhook_deliveries
    WHERE subscription_id = $1 ORDER BY created_at DESC, seq DESC LIMIT $2`,
  getDelivery: `SELECT id, event_id, subscription_id, status, next_attempt_at, created_at FROM webhook_deliveries
    WHERE id = $1 AND subscription_id = $2`,
  attemptsOf: 'SELECT * FROM webhook_attempts WHERE delivery_id = ANY ($1::text[]) ORDER BY delivery_id, attempt',
  // What a manual retry reads (delivery-rounds.ts decides): the row, locked, and whether its subscription is active.
  retryState: `SELECT d.status, d.attempt_count, d.lease_until, s.disabled_at IS NULL AS active
    FROM webhook_deliveries d JOIN webhook_subscriptions s ON s.id = d.subscription_id
    WHERE d.id = $1 AND d.subscription_id = $2
    FOR UPDATE OF d`,
  subscriptionActive: 'SELECT disabled_at IS NULL AS active FROM webhook_subscriptions WHERE id = $1',
  // A new round as delivery-rounds.ts decided it, with no lease.
  startRound: `UPDATE webhook_deliveries SET status = $2, attempt_count = $3, next_attempt_at = $4, lease_until = NULL, updated_at = $4
    WHERE id = $1`,
  // The selected deliveries, oldest first (webhook_deliveries_by_subscription), each made what recoveredRound
  // decided. The status is tested again on the row itself, so a delivery a concurrent recover or attempt
  // changed meanwhile is left as that made it.
  // Due 1 ms apart, oldest first and the newest at $7 (delivery-rounds.ts: recoveredRound), so the claims take
  // them in the order they were made.
  requeue: `UPDATE webhook_deliveries d SET status = $5, attempt_count = $6,
      next_attempt_at = $7::timestamptz - (r.n - r.rn) * interval '1 millisecond', lease_until = NULL, updated_at = $7
    FROM (SELECT id, row_number() OVER (ORDER BY created_at, seq) AS rn, count(*) OVER () AS n FROM (
        SELECT id, created_at, seq FROM webhook_deliveries
        WHERE subscription_id = $1 AND created_at >= $2 AND status = ANY ($3::text[])
        ORDER BY created_at, seq LIMIT $4) AS l) AS r
    WHERE d.id = r.id AND d.status = ANY ($3::text[])`,
  requeueLeft: `SELECT EXISTS (SELECT 1 FROM webhook_deliveries
      WHERE subscription_id = $1 AND created_at >= $2 AND status = ANY ($3::text[])) AS more`,
  countPending: "SELECT count(*) AS n FROM webhook_deliveries WHERE status = 'pending'",
  // When the next delivery is due: its next attempt, or the end of its lease if one is held.
  nextDue: `SELECT
      (SELECT min(d.next_attempt_at) FROM webhook_deliveries d
        JOIN webhook_subscriptions s ON s.id = d.subscription_id AND s.disabled_at IS NULL
        WHERE d.status = 'pending' AND d.lease_until IS NULL) AS unleased,
      (SELECT min(greatest(d.lease_until, d.next_attempt_at)) FROM webhook_deliveries d
        JOIN webhook_subscriptions s ON s.id = d.subscription_id AND s.disabled_at IS NULL
        WHERE d.status = 'pending' AND d.lease_until IS NOT NULL) AS leased`,
} as const;

type Name = keyof typeof SQL;

function named(name: Name, values: unknown[]): pg.QueryConfig {
  return { name: `wh-${name}`, text: SQL[name], values };
}

// Leases and attempt records are not worth an fsync each: losing the last ones in a server crash only makes
// their deliveries due again (at-least-once). Commits stay atomic; plants and subscriptions stay synchronous.
const BEGIN_ASYNC = 'BEGIN; SET LOCAL synchronous_commit TO off';

export class PgWebhookStore implements WebhookStore {
  /** Attempts that finish together share one transaction. */
  private readonly attempts: Batcher<PendingAttempt, void>;

  constructor(
    private readonly pool: pg.Pool,
    private readonly closed: () => boolean,
  ) {
    this.attempts = new Batcher({ commit: (batch) => this.commitAttempts(batch) });
  }

  private query<R extends pg.QueryResultRow>(name: Name, values: unknown[]): Promise<pg.QueryResult<R>> {
    return guarded(this.closed, () => this.pool.query<R>(named(name, values)));
  }

  async insertSubscription(
    sub: WebhookSubscription,
    admit: (existing: readonly WebhookSubscription[]) => SubscriptionRefusal | undefined,
  ): Promise<SubscriptionRefusal | undefined> {
    return guarded(this.closed, () =>
      retryingTransaction(this.pool, async (c) => {
        await c.query(named('lockSubscriptions', []));
        const { rows } = await c.query<SubscriptionRow>(named('listSubscriptions', []));
        const refusal = admit(rows.map((r) => subscriptionOf(r, pgText)));
        if (refusal) return refusal;
        const cursor = newSubscriptionCursor((await c.query<{ last_position: bigint }>(named('logEnd', []))).rows[0]!.last_position);
        await c.query(
          named('insertSubscription', [
            sub.id, sub.url, toDbText(sub.description), sub.secret, sub.createdAt, sub.disabledAt, toDbText(sub.disabledReason), sub.events.join(' '), sub.format, cursor,
          ]),
        );
        return undefined;
      }),
    );
  }

  async listSubscriptions(): Promise<WebhookSubscription[]> {
    return (await this.query<SubscriptionRow>('listSubscriptions', [])).rows.map((r) => subscriptionOf(r, pgText));
  }

  async getSubscription(id: string): Promise<WebhookSubscription | undefined> {
    if (!possibleId(id)) return undefined;
    const { rows } = await this.query<SubscriptionRow>('getSubscription', [id]);
    return rows[0] ? subscriptionOf(rows[0], pgText) : undefined;
  }

  async deleteSubscription(id: string): Promise<boolean> {
    if (!possibleId(id)) return false;
    // Retried on a deadlock or serialization failure all the same: nothing was committed, and a 503 would be a
    // wrong answer to a conflict.
    return guarded(this.closed, () =>
      retryingTransaction(this.pool, async (c) => {
        await c.query(named('lockPending', [id]));
        if ((await c.query(named('deleteSubscription', [id]))).rowCount === 0) return false;
        await cancelPending(c, id, '', new Date());
        return true;
      }),
    );
  }

  async replaceSecret(id: string, current: string, next: string): Promise<boolean> {
    return (await this.query('replaceSecret', [id, current, next])).rowCount === 1;
  }

  async enableSubscription(id: string): Promise<boolean> {
    if (!possibleId(id)) return false;
    return guarded(this.closed, () =>
      retryingTransaction(this.pool, async (c) => {
        const row = (await c.query<{ disabled: boolean; log_end: bigint }>(named('enablingState', [id]))).rows[0];
        const change = row ? enabling({ disabled: row.disabled }, row.log_end) : undefined;
        if (!change) return false;
        await c.query(named('enableSubscription', [id, change.fanOutReady ? 1 : 0, change.fannedThrough]));
        return true;
      }),
    );
  }

  async claimDueDeliveries(input: ClaimRequest): Promise<ClaimedDelivery[]> {
    if (input.limit <= 0 || input.perSubscription <= 0) return [];
    const rows = await guarded(this.closed, () =>
      retryingTransaction(
        this.pool,
        async (c) => {
          // Offers are locked until COMMIT, so a concurrent claim skips them even when this claim does not take
          // them: lock no more per subscription than the claim can take (they are offered again next poll).
          const offers = (await c.query<{ id: string; subscription_id: string; due: Date }>(
            named('dueOffers', [input.now, Math.min(input.perSubscription, input.limit), input.skipSubscriptions]),
          )).rows;
          const ids = pickClaims(offers.map((o) => ({ id: o.id, subscriptionId: o.subscription_id, due: o.due.getTime() })), input.limit);
          if (ids.length === 0) return [];
          const leased = (await c.query<ClaimRow>(named('lease', [ids, input.leaseUntil, new Date()]))).rows;
          const order = new Map(ids.map((id, i) => [id, i]));
          return leased.sort((a, b) => order.get(a.id)! - order.get(b.id)!);
        },
        BEGIN_ASYNC,
      ),
    );
    return rows.map(claimedOf);
  }

  /** Records the attempt and applies its outcome; attempts that finish together share one transaction. */
  recordAttempt(deliveryId: string, attempt: AttemptRecord, outcome: AttemptOutcome): Promise<void> {
    return this.attempts.submit({ deliveryId, attempt, outcome });
  }

  private async commitAttempts(batch: PendingAttempt[]): Promise<void[]> {
    // In delivery id order, so concurrent batches of other instances lock rows in one order.
    const ordered = [...batch].sort((a, b) => (a.deliveryId < b.deliveryId ? -1 : a.deliveryId > b.deliveryId ? 1 : 0));
    await guarded(this.closed, () =>
      retryingTransaction(
        this.pool,
        async (c) => {
          for (const p of ordered) await applyAttempt(c, p);
        },
        BEGIN_ASYNC,
      ),
    );
    return new Array<void>(batch.length);
  }

  async listDeliveries(subscriptionId: string, limit: number): Promise<DeliveryRecord[]> {
    if (!possibleId(subscriptionId)) return [];
    return this.deliveriesWithAttempts('listDeliveries', [subscriptionId, Math.max(0, Math.floor(limit))]);
  }

  async getDelivery(subscriptionId: string, deliveryId: string): Promise<DeliveryRecord | undefined> {
    if (!possibleId(subscriptionId) || !possibleId(deliveryId)) return undefined;
    return (await this.deliveriesWithAttempts('getDelivery', [deliveryId, subscriptionId]))[0];
  }

  async retryDelivery(subscriptionId: string, deliveryId: string, now: Date): Promise<boolean> {
    if (!possibleId(subscriptionId) || !possibleId(deliveryId)) return false;
    return guarded(this.closed, () =>
      retryingTransaction(this.pool, async (c) => {
        const row = (
          await c.query<{ status: DeliveryStatus; attempt_count: number; lease_until: Date | null; active: boolean }>(
            named('retryState', [deliveryId, subscriptionId]),
          )
        ).rows[0];
        if (!row) return false;
        const round = manualRetry(
          { status: row.status, attemptCount: Number(row.attempt_count), leaseUntil: row.lease_until, subscriptionActive: row.active },
          now,
        );
        if (!round) return false;
        await c.query(named('startRound', [deliveryId, round.status, round.attemptCount, round.nextAttemptAt]));
        return true;
      }),
    );
  }

  async requeueDeliveries(input: RequeueRequest): Promise<RequeueResult> {
    if (!possibleId(input.subscriptionId)) return { queued: 0, more: false };
    const select = [input.subscriptionId, input.createdSince, [...input.statuses]];
    // Retried on a deadlock: its rows are locked in creation order, an attempt batch's in id order.
    return guarded(this.closed, () =>
      retryingTransaction(this.pool, async (c) => {
        const active = (await c.query<{ active: boolean }>(named('subscriptionActive', [input.subscriptionId]))).rows[0]?.active === true;
        const round = recoveredRound(active, input.dueAt);
        const queued = round
          ? (await c.query(named('requeue', [...select, Math.max(0, Math.floor(input.limit)), round.status, round.attemptCount, round.nextAttemptAt]))).rowCount ?? 0
          : 0;
        const { rows } = await c.query<{ more: boolean }>(named('requeueLeft', select));
        return { queued, more: rows[0]!.more };
      }),
    );
  }

  async countPendingDeliveries(): Promise<number> {
    return Number((await this.query<{ n: bigint }>('countPending', [])).rows[0]!.n);
  }

  async nextDueAt(): Promise<Date | null> {
    const row = (await this.query<{ unleased: Date | null; leased: Date | null }>('nextDue', [])).rows[0]!;
    const times = [row.unleased, row.leased].filter((v): v is Date => v !== null).map((d) => d.getTime());
    return times.length === 0 ? null : new Date(Math.min(...times));
  }

  /**
   * Deliveries and their attempts from one snapshot: read apart, an attempt recorded between the two reads
   * showed beside the delivery's state from before it (its old next attempt time).
   */
  private deliveriesWithAttempts(name: 'listDeliveries' | 'getDelivery', values: unknown[]): Promise<DeliveryRecord[]> {
    return guarded(this.closed, () =>
      transaction(
        this.pool,
        async (c) => {
          const rows = (await c.query<DeliveryRow>(named(name, values))).rows;
          if (rows.length === 0) return [];
          return deliveriesOf(rows, (await c.query<AttemptRow>(named('attemptsOf', [rows.map((r) => r.id)]))).rows, pgText);
        },
        'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY',
      ),
    );
  }

}

async function applyAttempt(c: pg.PoolClient, { deliveryId, attempt, outcome }: PendingAttempt): Promise<void> {
  const state = (
    await c.query<{ status: DeliveryStatus; subscription_id: string; next_attempt_at: Date | null; attempt_count: number }>(
      named('deliveryState', [deliveryId]),
    )
  ).rows[0];
  if (!state) return;
  await c.query(
    named('insertAttempt', [
      deliveryId,
      attempt.at,
      attempt.statusCode,
      toDbText(attempt.error),
      Math.max(0, Math.round(attempt.durationMs)),
      toDbText(attemptRequestText(attempt)),
      toDbText(attemptResponseText(attempt)),
    ]),
  );
  const now = new Date();
  const s = settleAttempt({ status: state.status, nextAttemptAt: state.next_attempt_at, attemptCount: Number(state.attempt_count) }, outcome);
  await c.query(named('settle', [deliveryId, now, s.status, s.nextAttemptAt, s.attemptCount]));
  if (s.makesRoom) await c.query(named('ready', [state.subscription_id]));
  if (s.disableReason !== undefined) {
    await c.query(named('disableSubscription', [attempt.at, toDbText(s.disableReason), state.subscription_id]));
    await cancelPending(c, state.subscription_id, deliveryId, now);
  }
}

/** The subscription's pending deliveries but `keep` become what subscription-cursor.ts says. */
async function cancelPending(c: pg.PoolClient, subscriptionId: string, keep: string, now: Date): Promise<void> {
  await c.query(named('cancelPending', [now, subscriptionId, keep, CANCELLED.status, CANCELLED.nextAttemptAt]));
}
