// The storage interface every engine implements. Services depend on this file only, never on a driver.

/** A plant as stored. `id` is an exact int64. */
export interface PlantRecord {
  id: bigint;
  name: string;
  tag?: string;
}

/** What happened to a create: a new row, an identical replay, or a different plant under the same id. */
export type CreateOutcome =
  | { kind: 'created' }
  | { kind: 'replayed' }
  | { kind: 'conflict'; existing: PlantRecord };

/** A keyset page request: plants with id > after, in id order, at most limit of them. */
export interface PlantQuery {
  after?: bigint;
  limit: number;
  tag?: string;
}

/**
 * A page of plants as the JSON array the API answers (the Plant schema: ids digit for digit, tag absent when
 * not set), written by the database itself so that no row object is made in JavaScript.
 */
export interface PlantPageJson {
  json: string;
  /** The id of the page's last plant, when it has one. */
  lastId?: bigint;
  /** Whether plants follow it (with the same tag, when one was asked). */
  more: boolean;
}

/**
 * An event to write in the same transaction as the plant it announces (transactional outbox). It is
 * written only when the plant is newly created and at least one subscription is active; one delivery
 * row per active subscription is created with it.
 */
export interface OutboxEvent {
  id: string;
  type: string;
  /** The exact body every delivery sends. */
  payload: string;
}

export interface WebhookSubscription {
  id: string;
  url: string;
  description: string | null;
  /** The `whsec_` signing secret; needed in clear to sign, so it is stored (see README, Webhooks). */
  secret: string;
  createdAt: Date;
  disabledAt: Date | null;
  disabledReason: string | null;
}

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed' | 'cancelled';

export interface AttemptRecord {
  at: Date;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
}

export interface DeliveryRecord {
  id: string;
  eventId: string;
  subscriptionId: string;
  status: DeliveryStatus;
  nextAttemptAt: Date | null;
  createdAt: Date;
  attempts: AttemptRecord[];
}

/** A delivery claimed by a dispatcher, with everything needed to send it. */
export interface ClaimedDelivery {
  deliveryId: string;
  eventId: string;
  subscriptionId: string;
  url: string;
  secret: string;
  payload: string;
  /** Attempts already made before this one. */
  attemptCount: number;
}

/** What an attempt leads to: done, try again at a time, give up, or the subscription is gone (410). */
export type AttemptOutcome =
  | { status: 'succeeded' }
  | { status: 'pending'; nextAttemptAt: Date }
  | { status: 'failed' }
  | { status: 'disable-subscription'; reason: string };

export interface WebhookStore {
  insertSubscription(sub: WebhookSubscription): Promise<void>;
  listSubscriptions(): Promise<WebhookSubscription[]>;
  getSubscription(id: string): Promise<WebhookSubscription | undefined>;
  /** Deletes a subscription and cancels its pending deliveries; false when absent. */
  deleteSubscription(id: string): Promise<boolean>;
  /**
   * Leases up to `limit` due pending deliveries (next attempt at or before `now`, no live lease) until
   * `leaseUntil`, skipping the subscriptions in `skipSubscriptions`, at most `perSubscription` each.
   * A lease that expires (a dispatcher died) makes the delivery due again: at-least-once.
   */
  claimDueDeliveries(input: {
    now: Date;
    leaseUntil: Date;
    limit: number;
    perSubscription: number;
    skipSubscriptions: string[];
  }): Promise<ClaimedDelivery[]>;
  /** Records an attempt and its outcome, releasing the lease. */
  recordAttempt(deliveryId: string, attempt: AttemptRecord, outcome: AttemptOutcome): Promise<void>;
  /** Deliveries of one subscription, newest first, with their attempts. */
  listDeliveries(subscriptionId: string, limit: number): Promise<DeliveryRecord[]>;
  getDelivery(subscriptionId: string, deliveryId: string): Promise<DeliveryRecord | undefined>;
  /** Makes a failed or cancelled delivery pending again, due at `now`; false if it is not in such a state. */
  retryDelivery(subscriptionId: string, deliveryId: string, now: Date): Promise<boolean>;
  /** The earliest next attempt among pending deliveries, for the dispatcher's timer. */
  nextDueAt(): Promise<Date | null>;
  /** How many deliveries are pending (the outbox backlog), for metrics; cheap (a partial index). */
  countPendingDeliveries?(): Promise<number>;
}

/** Told about every group commit of createPlant: how many creates it held, how long it took, whether it committed. */
export type CommitObserver = (commit: { size: number; seconds: number; ok: boolean }) => void;

export interface TokenRecord {
  id: string;
  name: string;
  /** SHA-256 of the secret, hex. The secret itself is never stored. */
  hash: string;
  scopes: string[];
  createdAt: Date;
  lastUsedAt: Date | null;
  expiresAt: Date | null;
  revokedAt: Date | null;
}

/** One applied (or failed) migration; partial failure is reported as data, not only thrown. */
export interface MigrationResult {
  version: number;
  name: string;
  status: 'applied' | 'already-applied' | 'failed';
  error?: string;
}

export interface Store {
  readonly engine: string;
  /** Applies pending migrations in order; stops at the first failure, which it reports. */
  migrate(): Promise<MigrationResult[]>;
  /**
   * Durably creates a plant: resolves only after the row is committed and synced. Concurrent calls may
   * share one commit. Rejects with StoreUnavailableError when the commit fails; then nothing was stored.
   */
  createPlant(plant: PlantRecord, event?: OutboxEvent): Promise<CreateOutcome>;
  /**
   * Durably creates many plants in one transaction (one fsync), each by createPlant's rules, in order; the
   * event of a new plant comes from `eventFor`, called only when a subscription is active. Rejects with
   * StoreUnavailableError when the commit fails; then nothing of the batch was stored.
   */
  importPlants(plants: readonly PlantRecord[], eventFor: (plant: PlantRecord) => OutboxEvent): Promise<CreateOutcome[]>;
  getPlant(id: bigint): Promise<PlantRecord | undefined>;
  /** Plants with id > after (and the tag, if given), in id order. Served by the primary key index. */
  listPlants(query: PlantQuery): Promise<PlantRecord[]>;
  /**
   * The same page as listPlants, already serialized (the list endpoint's hot path); one read snapshot. Optional:
   * an engine without it is served by listPlants and the contract's serializer.
   */
  listPlantsJson?(query: PlantQuery): Promise<PlantPageJson>;
  /** Deletes a plant durably; false when there was none. */
  deletePlant(id: bigint): Promise<boolean>;
  countPlants(): Promise<number>;

  readonly webhooks: WebhookStore;

  insertToken(token: TokenRecord): Promise<void>;
  findTokenByHash(hash: string): Promise<TokenRecord | undefined>;
  listTokens(): Promise<TokenRecord[]>;
  /** Marks a token revoked; false when no such token exists or it was already revoked. */
  revokeToken(id: string, at: Date): Promise<boolean>;
  countTokens(): Promise<number>;
  /** Records last-used times; best effort, batched by the caller. */
  touchTokens(lastUsed: ReadonlyMap<string, Date>): Promise<void>;

  /** Throws when the store cannot answer. */
  ping(): Promise<void>;
  /** Commits whatever is pending, then releases the database. */
  close(): Promise<void>;
  /** Adds a commit observer (metrics); returns its removal. Optional: engines without group commit omit it. */
  addCommitObserver?(observer: CommitObserver): () => void;
}
