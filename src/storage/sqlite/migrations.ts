// SQLite's SQL for each version of the schema history (storage/schema-history.ts). Append only: a released
// migration is never edited, a change is a new version.
import type { Migration } from '../migrator.js';
import { migrationsOf } from '../schema-history.js';

export const MIGRATIONS: readonly Migration[] = migrationsOf({
  1: `
      CREATE TABLE plants (
        id         INTEGER PRIMARY KEY,   -- the client's int64 id, exact (SQLite integers are 64-bit)
        name       TEXT    NOT NULL,
        tag        TEXT,
        created_at INTEGER NOT NULL       -- unix milliseconds
      ) STRICT;

      CREATE TABLE api_tokens (
        id           TEXT    PRIMARY KEY,
        name         TEXT    NOT NULL,
        token_hash   TEXT    NOT NULL UNIQUE,   -- sha-256 hex of the secret; the secret is never stored
        scopes       TEXT    NOT NULL,          -- space-separated
        created_at   INTEGER NOT NULL,
        last_used_at INTEGER,
        expires_at   INTEGER,
        revoked_at   INTEGER
      ) STRICT;
    `,
  2: `
      CREATE INDEX plants_tag_id ON plants (tag, id) WHERE tag IS NOT NULL;

      CREATE TABLE webhook_subscriptions (
        id              TEXT    PRIMARY KEY,
        url             TEXT    NOT NULL,
        description     TEXT,
        secret          TEXT    NOT NULL,
        created_at      INTEGER NOT NULL,
        disabled_at     INTEGER,
        disabled_reason TEXT
      ) STRICT;

      -- The outbox: written in the transaction that creates the plant.
      CREATE TABLE webhook_events (
        id         TEXT    PRIMARY KEY,   -- the webhook-id header of every attempt
        type       TEXT    NOT NULL,
        payload    TEXT    NOT NULL,      -- the exact body sent
        created_at INTEGER NOT NULL
      ) STRICT;

      CREATE TABLE webhook_deliveries (
        id              TEXT    PRIMARY KEY,
        event_id        TEXT    NOT NULL REFERENCES webhook_events (id),
        subscription_id TEXT    NOT NULL,
        status          TEXT    NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed', 'cancelled')),
        attempt_count   INTEGER NOT NULL DEFAULT 0,  -- attempts in the current round (a manual retry starts a new one)
        next_attempt_at INTEGER,           -- due time while pending
        lease_until     INTEGER,           -- a dispatcher holds it until then
        created_at      INTEGER NOT NULL,
        updated_at      INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
      -- A claim reads each subscription's oldest due deliveries, and the leases held, without a scan.
      CREATE INDEX webhook_deliveries_pending_by_subscription ON webhook_deliveries (subscription_id, next_attempt_at) WHERE status = 'pending';
      CREATE INDEX webhook_deliveries_leased ON webhook_deliveries (lease_until) WHERE status = 'pending' AND lease_until IS NOT NULL;
      CREATE INDEX webhook_deliveries_by_subscription ON webhook_deliveries (subscription_id, created_at);

      CREATE TABLE webhook_attempts (
        delivery_id TEXT    NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
        attempt     INTEGER NOT NULL,
        at          INTEGER NOT NULL,
        status_code INTEGER,
        error       TEXT,
        duration_ms INTEGER NOT NULL,
        PRIMARY KEY (delivery_id, attempt)
      ) STRICT;
    `,
});
