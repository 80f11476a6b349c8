// The webhook store's statements on PostgreSQL, each a named prepared statement (pg-webhooks.ts runs them).
import type pg from 'pg';

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

export type Name = keyof typeof SQL;

export function named(name: Name, values: unknown[]): pg.QueryConfig {
  return { name: `wh-${name}`, text: SQL[name], values };
}
