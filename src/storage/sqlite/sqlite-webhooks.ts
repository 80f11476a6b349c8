// Webhook subscriptions, outbox deliveries and attempts on SQLite: the reads, on this process's connection; every
// write is a command (write-commands.ts) run by the store's one writer. The outbox rows themselves are written
// with the plant writes that make them; their deliveries by the sequencing pass (event-jobs.ts).
//
// A delivery is `pending` until it succeeds, fails for good, or is cancelled. A dispatcher leases due
// pending deliveries (lease_until) in one IMMEDIATE transaction, so two dispatchers never send the same
// delivery at once; a lease that expires (its dispatcher died) makes the delivery due again.
import type Database from 'better-sqlite3';
import { Batcher } from '../batcher.js';
import { claimedOf, deliveriesOf, subscriptionOf, type AttemptRow, type DeliveryRow, type SubscriptionRow } from '../rows.js';
import type { Write } from './write-commands.js';
import { claimLook, subscriptionsSeen, type AttemptWrite } from './sqlite-webhook-writes.js';
import type { AttemptOutcome, AttemptRecord, ClaimedDelivery, ClaimRequest, DeliveryRecord, RequeueRequest, RequeueResult, SubscriptionRefusal, WebhookStore, WebhookSubscription } from '../../webhooks/delivery.js';

type Guard = <T>(fn: () => T) => T;
type Statements = ReturnType<SqliteWebhookStore['prepare']>;

export class SqliteWebhookStore implements WebhookStore {
  private prepared?: Statements;
  /** Attempts that finish together share one command, one transaction. */
  private readonly attempts: Batcher<AttemptWrite, void>;

  constructor(
    private readonly db: Database.Database,
    private readonly guard: Guard,
    private readonly write: Write,
  ) {
    this.attempts = new Batcher({ commit: async (batch) => (await this.write('recordAttempts', batch), new Array<void>(batch.length)) });
  }

  /** Runs `fn` with the prepared statements under the store's guard (closed store, driver errors -> 503). */
  private run<T>(fn: (st: Statements) => T): T {
    return this.guard(() => fn(this.statements()));
  }

  /**
   * Like run, inside one read transaction: its reads see one snapshot. The writer thread commits on its own
   * connection, so two reads apart can see an attempt beside its delivery's state from before it.
   */
  private snapshot<T>(fn: (st: Statements) => T): T {
    return this.guard(() => {
      const st = this.statements();
      return this.db.transaction(() => fn(st))();
    });
  }

  /** Prepared statements need the schema, so they are made on first use, after migrating. */
  private statements() {
    return (this.prepared ??= this.prepare());
  }

  private prepare() {
    const db = this.db;
    return {
      listSubscriptions: db.prepare('SELECT * FROM webhook_subscriptions ORDER BY created_at, rowid'),
      getSubscription: db.prepare('SELECT * FROM webhook_subscriptions WHERE id = ?'),
      claimable: claimLook(db),
      listDeliveries: db.prepare(
        `SELECT id, event_id, subscription_id, status, next_attempt_at, created_at FROM webhook_deliveries
         WHERE subscription_id = ? ORDER BY created_at DESC, rowid DESC LIMIT +?`,
      ),
      getDelivery: db.prepare(
        `SELECT id, event_id, subscription_id, status, next_attempt_at, created_at FROM webhook_deliveries
         WHERE id = ? AND subscription_id = ?`,
      ),
      attemptsOf: db.prepare(
        `SELECT * FROM webhook_attempts WHERE delivery_id IN (SELECT value FROM json_each(?)) ORDER BY delivery_id, attempt`,
      ),
      pending: db.prepare("SELECT count(*) FROM webhook_deliveries WHERE status = 'pending'").pluck(),
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
    // The rule sees the subscriptions as read here; the writer inserts only if it finds them unchanged under
    // its lock, so concurrent creates cannot both pass it. Changed meanwhile (another create or delete), the
    // rule looks again: each round lost is a write that won.
    for (;;) {
      const rows = this.run((st) => st.listSubscriptions.all()) as SubscriptionRow[];
      const refusal = admit(rows.map((r) => subscriptionOf(r)));
      if (refusal) return refusal;
      if (await this.write('insertSubscription', sub, subscriptionsSeen(rows))) return undefined;
    }
  }

  async listSubscriptions(): Promise<WebhookSubscription[]> {
    return (this.run((st) => st.listSubscriptions.all()) as SubscriptionRow[]).map((r) => subscriptionOf(r));
  }

  async getSubscription(id: string): Promise<WebhookSubscription | undefined> {
    const row = this.run((st) => st.getSubscription.get(id)) as SubscriptionRow | undefined;
    return row ? subscriptionOf(row) : undefined;
  }

  deleteSubscription(id: string): Promise<boolean> {
    return this.write('deleteSubscription', id, Date.now());
  }

  replaceSecret(id: string, current: string, next: string): Promise<boolean> {
    return this.write('replaceSecret', id, current, next);
  }

  enableSubscription(id: string): Promise<boolean> {
    return this.write('enableSubscription', id);
  }

  async claimDueDeliveries(input: ClaimRequest): Promise<ClaimedDelivery[]> {
    if (input.limit <= 0 || input.perSubscription <= 0) return [];
    // The dispatcher looks at least once a poll interval, and most looks find nothing (no subscription, or
    // nothing due yet). Looking first here, without the write lock, keeps those looks off the writer; what is
    // found is claimed there, decided again under its lock.
    if (this.run((st) => st.claimable(input)).length === 0) return [];
    return (await this.write('claim', input)).map(claimedOf);
  }

  /**
   * Records the attempt and applies its outcome in one transaction. Attempts that finish together share
   * one commit, like plant creates: the promise resolves once it is committed. Not fsynced (sqlite-webhook-writes.ts):
   * after a power loss the last attempts may be unrecorded, and those deliveries are sent again with the same
   * webhook-id, which at-least-once delivery allows. A process crash (kill -9) loses nothing.
   */
  recordAttempt(deliveryId: string, attempt: AttemptRecord, outcome: AttemptOutcome): Promise<void> {
    return this.attempts.submit([deliveryId, attempt, outcome]);
  }

  async listDeliveries(subscriptionId: string, limit: number): Promise<DeliveryRecord[]> {
    return this.snapshot((st) => {
      const rows = st.listDeliveries.all(subscriptionId, Math.max(0, Math.floor(limit))) as DeliveryRow[];
      return this.withAttempts(st, rows);
    });
  }

  async getDelivery(subscriptionId: string, deliveryId: string): Promise<DeliveryRecord | undefined> {
    return this.snapshot((st) => {
      const row = st.getDelivery.get(deliveryId, subscriptionId) as DeliveryRow | undefined;
      return row ? this.withAttempts(st, [row])[0] : undefined;
    });
  }

  retryDelivery(subscriptionId: string, deliveryId: string, now: Date): Promise<boolean> {
    return this.write('retryDelivery', subscriptionId, deliveryId, now);
  }

  requeueDeliveries(input: RequeueRequest): Promise<RequeueResult> {
    return this.write('requeueDeliveries', input);
  }

  async countPendingDeliveries(): Promise<number> {
    // Served by the partial index webhook_deliveries_due (status = 'pending'): no table scan.
    return this.run((st) => st.pending.get()) as number;
  }

  async nextDueAt(): Promise<Date | null> {
    return this.snapshot((st) => {
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
