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
import { named, type Name } from './pg-webhook-statements.js';

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
