// Every write to a SQLite file, as named commands run by its one writer (one connection, one thread): each is a
// function of the writer's connection and plain arguments (what structured clone and the cluster's v8
// serialization carry: bigints and Dates included), runs in one transaction, and returns rows in the engine's
// form, which the caller turns into records. The rules are the features' (plants/, webhooks/, events/); this file
// holds statements and transactions. A transport (write-transports.ts, process/worker-link.ts) carries a command
// as a WireCommand and its answer as a WireReply, the one codec below, whatever the setting.
import type Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { StoreUnavailableError } from '../../errors/store-errors.js';
import { decodeItems, encodeOutcomes, type WireCommand, type WireItems, type WireOutcomes, type WireReply } from '../writer-wire.js';
import { foldName } from '../../plants/plant-search.js';
import type { PlantWrite } from '../../plants/plant.js';
import { plantBatch, type PlantStatements } from '../plant-writes.js';
import { runSteps } from '../../kit/steps.js';
import { attemptRequestText, attemptResponseText, versionedPlantOf, type PlantRow } from '../rows.js';
import { createEventJobs, withoutSync } from './event-jobs.js';
import type { ClaimRow, SubscriptionRow } from '../rows.js';
import type { TokenRecord } from '../../auth/token.js';
import type { TicketRecord } from '../../auth/stream-tickets.js';
import type { RestoreRecord } from '../restores.js';
import type { AttemptOutcome, AttemptRecord, ClaimRequest, DeliveryStatus, RequeueRequest, RequeueResult, WebhookSubscription } from '../../webhooks/delivery.js';
import { settleAttempt } from '../../webhooks/attempt-settlement.js';
import { manualRetry, recoveredRound } from '../../webhooks/delivery-rounds.js';
import { CANCELLED, enabling, newSubscriptionCursor } from '../../webhooks/subscription-cursor.js';
import { pickClaims, type Offer } from '../../webhooks/claim-policy.js';

/** An attempt as recordAttempts takes it (webhooks' recorder batches those that finish together). */
export type AttemptWrite = [deliveryId: string, attempt: AttemptRecord, outcome: AttemptOutcome];

/**
 * The commands on one connection; each group's statements are prepared on its first use (after migrating), the
 * plant writes' at once when `ready` says so (a write worker started after migrating: the first write does not
 * wait for them; a store an older version migrated may lack tables, and then they wait for the first write).
 */
export function createWriteCommands(db: Database.Database, { ready = false } = {}) {
  const plants = once(() => createBatchWriter(db));
  if (ready) {
    try {
      plants();
    } catch {
      // Prepared by the first plant write, which reports what is wrong.
    }
  }
  const jobs = once(() => createEventJobs(db));
  const hooks = once(() => webhookWrites(db));
  const tokens = once(() => tokenWrites(db));
  const tickets = once(() => ticketWrites(db));
  return {
    /** A batch of plant writes (writer-wire.ts's flat form), answered with their outcomes, flat too (WireOutcomes). */
    plants: (items: WireItems) => plants()(decodeItems(items)),
    /** The same, with when its statements and its COMMIT ran (tracing on). */
    plantsTimed: (items: WireItems) => plants().timed(decodeItems(items)),
    sequence: (maxDeliveries: number, now: number) => jobs().sequence(maxDeliveries, now),
    removeOlderThan: (cutoff: number, maxEvents: number) => jobs().removeOlderThan(cutoff, maxEvents),
    insertSubscription: (sub: WebhookSubscription, seen: string) => hooks().insertSubscription(sub, seen),
    deleteSubscription: (id: string, now: number) => hooks().deleteSubscription(id, now),
    replaceSecret: (id: string, current: string, next: string) => hooks().replaceSecret.run(next, id, current).changes === 1,
    enableSubscription: (id: string) => hooks().enableSubscription(id),
    claim: (request: ClaimRequest) => hooks().claim(request),
    recordAttempts: (attempts: readonly AttemptWrite[]) => hooks().recordAttempts(attempts),
    retryDelivery: (subscriptionId: string, deliveryId: string, now: Date) => hooks().retryDelivery(subscriptionId, deliveryId, now),
    requeueDeliveries: (input: RequeueRequest) => hooks().requeueDeliveries(input),
    insertToken: (t: TokenRecord) => void tokens().insert(t),
    revokeToken: (id: string, at: Date) => tokens().revoke.run(at.getTime(), id).changes === 1,
    touchTokens: (lastUsed: readonly (readonly [string, Date])[]) => tokens().touch(lastUsed),
    recordRestore: (r: RestoreRecord) => tokens().recordRestore(r),
    insertTicket: (t: TicketRecord, expiredBefore: Date) => tickets()(t, expiredBefore),
  };
}

export type WriteCommands = ReturnType<typeof createWriteCommands>;
export type CommandName = keyof WriteCommands;
export type ArgsOf<N extends CommandName> = Parameters<WriteCommands[N]>;
export type ResultOf<N extends CommandName> = ReturnType<WriteCommands[N]>;

/** How the engine's ports ask the writer for a command. */
export type Write = <N extends CommandName>(name: N, ...args: ArgsOf<N>) => Promise<ResultOf<N>>;

/** The writer's side of the codec: runs the command and answers with its result, or with what failed. */
export function runCommand(commands: WriteCommands, command: WireCommand): WireReply {
  try {
    const run = commands[command.name as CommandName] as ((...args: readonly unknown[]) => unknown) | undefined;
    if (!run) throw new Error(`no such write command: ${command.name}`);
    return { ok: true, result: run(...command.args) };
  } catch (err) {
    return failedReply(err);
  }
}

/** A failure as a reply; the driver's error code (SQLITE_BUSY, SQLITE_FULL...) crosses with it. */
export function failedReply(err: unknown): WireReply {
  const cause = err instanceof StoreUnavailableError && err.cause instanceof Error ? err.cause : err;
  return { ok: false, message: (cause as Error).message, code: (cause as { code?: string }).code };
}

/** The caller's side of the codec: the result, or a StoreUnavailableError holding the writer's error. */
export function resultOf<N extends CommandName>(reply: WireReply): ResultOf<N> {
  if (reply.ok) return reply.result as ResultOf<N>;
  throw new StoreUnavailableError(Object.assign(new Error(reply.message), { code: reply.code }));
}

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

/**
 * When a timed batch ran (milliseconds since the epoch, this thread's clock): BEGIN IMMEDIATE and the
 * statements from `began` to `written`, then the COMMIT (the WAL write and its fsync) until `committed`.
 */
export interface BatchTiming {
  began: number;
  written: number;
  committed: number;
}

interface BatchWriter {
  /** Commits a batch, in one transaction: each write's outcome, in the wire's form. */
  (items: readonly PlantWrite[]): WireOutcomes;
  /** The same, timed (tracing on: the commit span's children). */
  timed(items: readonly PlantWrite[]): { results: WireOutcomes; timing: BatchTiming };
}

const epochNow = () => performance.timeOrigin + performance.now();

/**
 * The plant batch (storage/plant-writes.ts plantBatch) on the writer's connection: one IMMEDIATE transaction, one
 * fsync. Versions come from the store-wide counter, one step per batch; events take their feed positions in the
 * transaction: one writer at a time holds the lock, so the order of positions is commit order (PostgreSQL, with
 * concurrent writers, places events in a pass after the commit). Prepares the statements once.
 */
function createBatchWriter(db: Database.Database): BatchWriter {
  const takeVersions = db.prepare('UPDATE plant_version_counter SET last = last + ? RETURNING last').pluck().safeIntegers(true);
  const insertPlant = db.prepare('INSERT INTO plants (id, name, tag, created_at, version, name_folded) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING');
  const getPlant = db.prepare('SELECT id, name, tag, version FROM plants WHERE id = ?').safeIntegers(true);
  const updatePlant = db.prepare('UPDATE plants SET name = @name, tag = @tag, version = @version, name_folded = @folded WHERE id = @id');
  const deletePlant = db
    .prepare('DELETE FROM plants WHERE id = @id AND (@ifVersion IS NULL OR version = @ifVersion) RETURNING id, name, tag, version')
    .safeIntegers(true);
  const insertEvent = db.prepare('INSERT INTO webhook_events (id, type, payload, created_at, position, trace_context) VALUES (?, ?, ?, ?, ?, ?)');
  const lastPosition = db.prepare('SELECT last_position FROM event_log WHERE id = 1').pluck().safeIntegers(true);
  const setLastPosition = db.prepare('UPDATE event_log SET last_position = ? WHERE id = 1');

  let now = 0;
  /** The next version to give: the batch took its writes' count of them from the counter (unused ones are gaps). */
  let next = 0n;
  const find = (id: bigint) => {
    const row = getPlant.get(id) as PlantRow | undefined;
    return row && versionedPlantOf(row);
  };
  const statements: PlantStatements = {
    begin(writes) {
      now = Date.now();
      next = (takeVersions.get(writes) as bigint) - BigInt(writes) + 1n;
    },
    insert: (plants) => plants.map(({ id, name, tag }) => (insertPlant.run(id, name, tag ?? null, now, next, foldName(name)).changes === 1 ? next++ : null)),
    stored: (ids) => ids.flatMap((id) => find(id) ?? []),
    // One writer: nothing deletes between its statements.
    vanished: (id) => {
      throw new Error(`create of plant ${id} found its id taken and then no plant under it`);
    },
    current: find,
    update({ id, name, tag }) {
      updatePlant.run({ id, name, tag: tag ?? null, version: next, folded: foldName(name) });
      return next++;
    },
    remove(id, ifVersion) {
      const row = deletePlant.get({ id, ifVersion: ifVersion ?? null }) as PlantRow | undefined;
      return row && { plant: versionedPlantOf(row), version: next++ };
    },
    insertEvents(events) {
      let position = lastPosition.get() as bigint;
      for (const e of events) insertEvent.run(e.id, e.type, e.payload, now, ++position, e.trace);
      setLastPosition.run(position);
    },
  };
  /** Set while a timed batch runs: its transaction notes when its statements are done. */
  let timing: BatchTiming | undefined;
  const commit = db.transaction((items: readonly PlantWrite[]): WireOutcomes => {
    const outcomes = runSteps(plantBatch(items), statements);
    if (timing) timing.written = epochNow();
    return encodeOutcomes(outcomes);
  });
  const write = (items: readonly PlantWrite[]) => commit.immediate(items);
  return Object.assign(write, {
    timed(items: readonly PlantWrite[]) {
      const began = epochNow();
      const t = (timing = { began, written: began, committed: began });
      try {
        const results = commit.immediate(items);
        t.committed = epochNow();
        return { results, timing: t };
      } finally {
        timing = undefined;
      }
    },
  });
}

function webhookWrites(db: Database.Database) {
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

/** Tokens and the restore record: single statements, or one small transaction. */
function tokenWrites(db: Database.Database) {
  const insert = db.prepare(
    'INSERT INTO api_tokens (id, name, token_hash, scopes, created_at, last_used_at, expires_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
  );
  const touch = db.prepare('UPDATE api_tokens SET last_used_at = max(coalesce(last_used_at, 0), ?) WHERE id = ?');
  const raiseCounter = db.prepare('UPDATE plant_version_counter SET last = max(last, ?)');
  const insertRestore = db.prepare('INSERT INTO store_restores (restored_at, newest_event_at, versions_from) VALUES (?, ?, ?)');
  return {
    insert: (t: TokenRecord) =>
      insert.run(t.id, t.name, t.hash, t.scopes.join(' '), t.createdAt.getTime(), ms(t.lastUsedAt), ms(t.expiresAt), ms(t.revokedAt)),
    revoke: db.prepare('UPDATE api_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL'),
    touch: db.transaction((lastUsed: readonly (readonly [string, Date])[]) => {
      for (const [id, at] of lastUsed) touch.run(at.getTime(), id);
    }),
    recordRestore: (r: RestoreRecord) =>
      db.transaction(() => {
        raiseCounter.run(r.versionsFrom);
        insertRestore.run(r.restoredAt.getTime(), r.newestEventAt?.getTime() ?? null, r.versionsFrom);
      }).immediate(),
  };
}

function ticketWrites(db: Database.Database) {
  const insert = db.prepare('INSERT INTO event_tickets (ticket_hash, token_id, expires_at) VALUES (?, ?, ?)');
  const removeExpired = db.prepare('DELETE FROM event_tickets WHERE expires_at < ?');
  return db.transaction((t: TicketRecord, expiredBefore: Date) => {
    removeExpired.run(expiredBefore.getTime());
    insert.run(t.hash, t.tokenId, t.expiresAt.getTime());
  });
}

function once<T>(make: () => T): () => T {
  let made: T | undefined;
  return () => (made ??= make());
}

function ms(d: Date | null): number | null {
  return d ? d.getTime() : null;
}

function dateOf(v: number | null): Date | null {
  return v === null ? null : new Date(v);
}
