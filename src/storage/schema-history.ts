// The schema's history, written once for every engine: numbered versions whose DDL is rendered with the
// engine's few type terms (SchemaDialect). Append only: a released version is never edited and a released
// dialect term never changes (either would make two databases of one version differ); a change is a new version.
import type { Migration } from './migrator.js';
import { fillFoldedNames, type FoldedNamesPort } from './folded-names.js';

/** The ports the history's data steps run over: each engine's migration adapter gives them. */
export interface HistoryPorts {
  foldedNames: FoldedNamesPort;
}

/** What differs between engines in the DDL, and nothing else. */
export interface SchemaDialect {
  /** The column type of a client's int64 id used as the primary key. */
  int64Key: string;
  /** The column type of a point in time. */
  time: string;
  /** What follows the closing parenthesis of CREATE TABLE. */
  tableOptions: string;
  /**
   * An insertion-order column for tables listed oldest first, where the engine has no implicit one, with the
   * separator before it (empty where the engine's row order serves).
   */
  orderColumn: string;
  /** That column as the last key of an index (`, seq`), or empty. */
  orderKey: string;
  /** The column type of a 64-bit integer that is not a key. */
  int64: string;
  /**
   * DDL of the store-wide counter that plant versions are drawn from (so that a version is never reused for
   * an id, even after a delete and a new create), starting above 1, the version every older plant gets.
   */
  versionCounter: string;
  /** DDL that gives webhook_events an insertion-order column where the engine has no implicit one (or empty). */
  addEventOrder: string;
  /** The expression of webhook_events' insertion order (`rowid`, `seq`). */
  eventOrder: string;
  /**
   * The key a name-order index holds for a name, ordering by code points: the name itself where an index entry
   * may be any size (SQLite), its first characters where it may not (PostgreSQL's btree: names stored before
   * their 256-character limit may be far longer than an entry holds; the engine's statements order by the
   * name after that key, which gives the same order, see postgres/pg-plant-queries.ts).
   */
  nameKey: string;
  /**
   * DDL of the trigram index of `plants.name_folded` (for `q`), kept in step with the table by the engine
   * itself (an index, or an FTS5 table and its triggers).
   */
  nameTrigramIndex: string;
  /**
   * The key a name-order index holds (the order: folded name, name, id; storage/plant-query.ts): the folded name
   * and the name where an index entry may be any size (SQLite), the folded name's first characters where it may
   * not (PostgreSQL: its statements order by the whole folded name and the name after that key).
   */
  foldedNameKey: string;
  /** A condition on a plants row: its name holds a character beyond ASCII (or one whose length the engine miscounts). */
  nameBeyondAscii: string;
  /**
   * The definition of webhook_events.plant_id, generated from the payload's `id` member (an int64 written digit
   * for digit): what ALTER TABLE ADD COLUMN takes on each engine.
   */
  eventPlantColumn: string;
}

/**
 * The schema version that added plants.name_folded: a store migrated to it fills the folded names that are NULL
 * (written before it, or set NULL by a later version that changed the folding) when it opens: its data step.
 */
export const FOLDED_NAMES_VERSION = 11;

const HISTORY: readonly { version: number; name: string; ddl: (d: SchemaDialect) => string; fill?: Migration<HistoryPorts>['fill'] }[] = [
  {
    version: 1,
    name: 'plants and api tokens',
    ddl: (d) => `
      CREATE TABLE plants (
        id         ${d.int64Key} PRIMARY KEY,   -- the client's int64 id, exact
        name       TEXT NOT NULL,
        tag        TEXT,
        created_at ${d.time} NOT NULL
      )${d.tableOptions};

      CREATE TABLE api_tokens (
        id           TEXT PRIMARY KEY,
        name         TEXT NOT NULL,
        token_hash   TEXT NOT NULL UNIQUE,   -- sha-256 hex of the secret; the secret is never stored
        scopes       TEXT NOT NULL,          -- space-separated
        created_at   ${d.time} NOT NULL,
        last_used_at ${d.time},
        expires_at   ${d.time},
        revoked_at   ${d.time}${d.orderColumn}
      )${d.tableOptions};
    `,
  },
  {
    version: 2,
    name: 'webhook subscriptions, outbox and deliveries',
    ddl: (d) => `
      CREATE INDEX plants_tag_id ON plants (tag, id) WHERE tag IS NOT NULL;

      CREATE TABLE webhook_subscriptions (
        id              TEXT PRIMARY KEY,
        url             TEXT NOT NULL,
        description     TEXT,
        secret          TEXT NOT NULL,
        created_at      ${d.time} NOT NULL,
        disabled_at     ${d.time},
        disabled_reason TEXT${d.orderColumn}
      )${d.tableOptions};

      -- The outbox: written in the transaction that creates the plant.
      CREATE TABLE webhook_events (
        id         TEXT PRIMARY KEY,   -- the webhook-id header of every attempt
        type       TEXT NOT NULL,
        payload    TEXT NOT NULL,      -- the exact body sent
        created_at ${d.time} NOT NULL
      )${d.tableOptions};

      CREATE TABLE webhook_deliveries (
        id              TEXT PRIMARY KEY,
        event_id        TEXT NOT NULL REFERENCES webhook_events (id),
        subscription_id TEXT NOT NULL,
        status          TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed', 'cancelled')),
        attempt_count   INTEGER NOT NULL DEFAULT 0,  -- attempts in the current round (a manual retry starts a new one)
        next_attempt_at ${d.time},           -- due time while pending
        lease_until     ${d.time},           -- a dispatcher holds it until then
        created_at      ${d.time} NOT NULL,
        updated_at      ${d.time} NOT NULL${d.orderColumn}
      )${d.tableOptions};
      CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
      -- A claim reads each subscription's oldest due deliveries, and the leases held, without a scan.
      CREATE INDEX webhook_deliveries_pending_by_subscription ON webhook_deliveries (subscription_id, next_attempt_at) WHERE status = 'pending';
      CREATE INDEX webhook_deliveries_leased ON webhook_deliveries (lease_until) WHERE status = 'pending' AND lease_until IS NOT NULL;
      CREATE INDEX webhook_deliveries_by_subscription ON webhook_deliveries (subscription_id, created_at${d.orderKey});

      CREATE TABLE webhook_attempts (
        delivery_id TEXT NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
        attempt     INTEGER NOT NULL,
        at          ${d.time} NOT NULL,
        status_code INTEGER,
        error       TEXT,
        duration_ms INTEGER NOT NULL,
        PRIMARY KEY (delivery_id, attempt)
      )${d.tableOptions};
    `,
  },
  {
    version: 3,
    name: 'plant versions',
    ddl: (d) => `
      -- Each change of a plant takes a new version from the counter: the plant's ETag.
      ALTER TABLE plants ADD COLUMN version ${d.int64} NOT NULL DEFAULT 1;
      ${d.versionCounter}
    `,
  },
  {
    version: 4,
    name: 'event types of subscriptions',
    ddl: () => `
      -- Space-separated event types. Subscriptions made before there were other events keep receiving newPlant only.
      ALTER TABLE webhook_subscriptions ADD COLUMN events TEXT NOT NULL DEFAULT 'newPlant';
    `,
  },
  {
    version: 5,
    name: 'events feed',
    ddl: (d) => `
      -- Every write's event, with its feed position once the sequencer gave it one (events/event-log.ts).
      ALTER TABLE webhook_events ADD COLUMN position ${d.int64};
      ${d.addEventOrder}
      -- Events written before this version already have their deliveries: they are sequenced here.
      UPDATE webhook_events SET position = ${d.eventOrder};
      CREATE UNIQUE INDEX webhook_events_position ON webhook_events (position);
      CREATE INDEX webhook_events_unsequenced ON webhook_events (created_at) WHERE position IS NULL;
      CREATE INDEX webhook_events_created ON webhook_events (created_at);
      -- Retention removes an event's finished deliveries with it.
      CREATE INDEX webhook_deliveries_by_event ON webhook_deliveries (event_id);
      -- One row: the last position given, the last one whose deliveries are made, and the last one retention
      -- removed (0: none).
      CREATE TABLE event_log (
        id              INTEGER PRIMARY KEY CHECK (id = 1),
        last_position   ${d.int64} NOT NULL,
        fanned_through  ${d.int64} NOT NULL,
        removed_through ${d.int64} NOT NULL
      )${d.tableOptions};
      INSERT INTO event_log (id, last_position, fanned_through, removed_through)
        SELECT 1, coalesce(max(position), 0), coalesce(max(position), 0), 0 FROM webhook_events;
    `,
  },
  {
    version: 6,
    name: 'deliveries made a slice at a time',
    ddl: () => `
      -- The last subscription whose delivery of the event after fanned_through is made, while that event's
      -- deliveries are made in slices (until version 7); NULL between events.
      ALTER TABLE event_log ADD COLUMN fanned_subscription TEXT;
    `,
  },
  {
    version: 7,
    name: 'deliveries made per subscription',
    ddl: (d) => `
      -- Each subscription's cursor into the event log (its deliveries are made up to there), and whether the
      -- passes look at it (0 while it holds as many pending deliveries as it may; a settled delivery sets 1).
      -- event_log's fanned_through and fanned_subscription are no longer used.
      ALTER TABLE webhook_subscriptions ADD COLUMN fanned_through ${d.int64} NOT NULL DEFAULT 0;
      ALTER TABLE webhook_subscriptions ADD COLUMN fan_out_ready INTEGER NOT NULL DEFAULT 1;
      UPDATE webhook_subscriptions SET fanned_through = (SELECT fanned_through FROM event_log WHERE id = 1);
      CREATE INDEX webhook_subscriptions_fan_out ON webhook_subscriptions (fanned_through) WHERE fan_out_ready = 1 AND disabled_at IS NULL;
    `,
  },
  {
    version: 8,
    name: 'delivery format of subscriptions',
    ddl: () => `
      -- The body a subscription's deliveries carry: 'plain' (the event's body) or 'envelope' (Standard Webhooks'
      -- {type, timestamp, data}). Subscriptions made before there was a choice keep the plain body.
      ALTER TABLE webhook_subscriptions ADD COLUMN format TEXT NOT NULL DEFAULT 'plain';
    `,
  },
  {
    version: 9,
    name: 'restores',
    ddl: (d) => `
      -- Each restore from a backup (storage/restores.ts): when, the creation time of the newest event the backup
      -- held (NULL: none), and where the version counter was moved. The events made between the two are gone, and
      -- a feed cursor naming one answers 410.
      CREATE TABLE store_restores (
        restored_at     ${d.time} NOT NULL,
        newest_event_at ${d.time},
        versions_from   ${d.int64} NOT NULL
      )${d.tableOptions};
    `,
  },
  {
    version: 10,
    name: 'trace context of events',
    ddl: () => `
      -- The W3C trace context (JSON: traceparent, tracestate) of the write that made the event, when tracing was
      -- on: its deliveries continue that trace, and the feed shows it. NULL: written untraced.
      ALTER TABLE webhook_events ADD COLUMN trace_context TEXT;
    `,
  },
  {
    version: FOLDED_NAMES_VERSION,
    name: 'plant search and name order',
    ddl: (d) => `
      -- The name folded (plants/plant-search.ts), written with the name; NULL on rows written before this
      -- version until the store fills it in when it opens (plants_unfolded finds them).
      ALTER TABLE plants ADD COLUMN name_folded TEXT;
      CREATE INDEX plants_unfolded ON plants (id) WHERE name_folded IS NULL;
      CREATE INDEX plants_name_id ON plants (${d.nameKey}, id);
      CREATE INDEX plants_tag_name_id ON plants (tag, ${d.nameKey}, id) WHERE tag IS NOT NULL;
      ${d.nameTrigramIndex}
    `,
    fill: (ports) => fillFoldedNames(ports.foldedNames),
  },
  {
    version: 12,
    name: 'names folded without accents, in reading order',
    ddl: (d) => `
      -- The folding gained compatibility decomposition and lost combining marks (plants/plant-search.ts). An ASCII
      -- name folds as before; every other folded name is set NULL here, and the store folds those names again
      -- when it opens (version 11's fill), which also puts them back in the trigram index.
      UPDATE plants SET name_folded = NULL WHERE name_folded IS NOT NULL AND ${d.nameBeyondAscii};
      -- A name order is now the folded name, then the name, then the id. plants_name_id and plants_tag_name_id
      -- stay while instances of the previous release may run on this schema (a rolling update): their name order
      -- reads them. A later version drops them.
      CREATE INDEX plants_folded_name_id ON plants (${d.foldedNameKey}, id);
      CREATE INDEX plants_tag_folded_name_id ON plants (tag, ${d.foldedNameKey}, id) WHERE tag IS NOT NULL;
    `,
  },
  {
    version: 13,
    name: 'feed filters',
    ddl: (d) => `
      -- The plant an event is about, from its payload (its id member), so that a reader of one plant's events
      -- (GET /events with plant=) reads them through an index instead of every event. Generated by the database,
      -- for every event whoever writes it: events from before this version, and those an instance of the
      -- previous release writes during a rolling update, have it too.
      ALTER TABLE webhook_events ADD COLUMN ${d.eventPlantColumn};
      CREATE INDEX webhook_events_plant ON webhook_events (plant_id, position);
    `,
  },
  {
    version: 14,
    name: 'event stream tickets',
    ddl: (d) => `
      -- Tickets a browser's EventSource opens GET /events with (auth/stream-tickets.ts): the secret's hash only,
      -- the token it speaks for (its record's state is read with the ticket, so a revoked token's tickets die
      -- with it), and its end. Expired tickets are removed as new ones are made.
      CREATE TABLE event_tickets (
        ticket_hash TEXT PRIMARY KEY,   -- sha-256 hex of the ticket; the ticket itself is never stored
        token_id    TEXT NOT NULL,
        expires_at  ${d.time} NOT NULL
      )${d.tableOptions};
      CREATE INDEX event_tickets_expiry ON event_tickets (expires_at);
    `,
  },
  {
    version: 15,
    name: 'attempt requests and answers',
    ddl: () => `
      -- What each attempt sent and what it was answered, as JSON (storage/rows.ts attemptRequestText and
      -- attemptResponseText): the request's headers and body; the answer's headers and the first KiB of its body
      -- (webhooks/sender.ts bounds them). NULL on attempts from before this version, and the answer NULL when
      -- none came. Nullable columns: the previous release keeps writing attempts (without them) on this schema.
      ALTER TABLE webhook_attempts ADD COLUMN request TEXT;
      ALTER TABLE webhook_attempts ADD COLUMN response TEXT;
    `,
  },
];

/** Every version of the history, in order, as the engine's SQL, with its data step. */
export function migrationsFor(dialect: SchemaDialect): Migration<HistoryPorts>[] {
  return HISTORY.map(({ version, name, ddl, fill }) => ({ version, name, sql: ddl(dialect), ...(fill && { fill }) }));
}
