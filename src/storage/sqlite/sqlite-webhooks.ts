// Webhook subscriptions, outbox deliveries and attempts on SQLite. The outbox rows themselves are written by
// SqliteStore's group commit, in the transaction that creates the plant.
import type Database from 'better-sqlite3';
import type {
  AttemptOutcome,
  AttemptRecord,
  ClaimedDelivery,
  DeliveryRecord,
  WebhookStore,
  WebhookSubscription,
} from '../store.js';

type Guard = <T>(fn: () => T) => T;

export class SqliteWebhookStore implements WebhookStore {
  constructor(
    private readonly db: Database.Database,
    private readonly guard: Guard,
  ) {}

  // TODO(issue 3, webhooks helper): implement every method below.
  async insertSubscription(_sub: WebhookSubscription): Promise<void> {
    throw new Error('not implemented');
  }
  async listSubscriptions(): Promise<WebhookSubscription[]> {
    throw new Error('not implemented');
  }
  async getSubscription(_id: string): Promise<WebhookSubscription | undefined> {
    throw new Error('not implemented');
  }
  async deleteSubscription(_id: string): Promise<boolean> {
    throw new Error('not implemented');
  }
  async claimDueDeliveries(_input: { now: Date; leaseUntil: Date; limit: number; perSubscription: number; skipSubscriptions: string[] }): Promise<ClaimedDelivery[]> {
    throw new Error('not implemented');
  }
  async recordAttempt(_deliveryId: string, _attempt: AttemptRecord, _outcome: AttemptOutcome): Promise<void> {
    throw new Error('not implemented');
  }
  async listDeliveries(_subscriptionId: string, _limit: number): Promise<DeliveryRecord[]> {
    throw new Error('not implemented');
  }
  async getDelivery(_subscriptionId: string, _deliveryId: string): Promise<DeliveryRecord | undefined> {
    throw new Error('not implemented');
  }
  async retryDelivery(_subscriptionId: string, _deliveryId: string, _now: Date): Promise<boolean> {
    throw new Error('not implemented');
  }
  async nextDueAt(): Promise<Date | null> {
    void this.db;
    void this.guard;
    throw new Error('not implemented');
  }
}
