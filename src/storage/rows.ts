// The rows of the schema every engine holds (the same tables and columns, see each engine's migrations) and
// how they become the features' records. Engines differ only in how a time arrives (SQLite: milliseconds
// since the epoch; PostgreSQL: a Date) and in how stored text is decoded (PostgreSQL escapes U+0000).
import type { TokenRecord } from '../auth/token.js';
import type { StoredTicket } from '../auth/stream-tickets.js';
import type { PlantRecord, VersionedPlant } from '../plants/plant.js';
import { WEBHOOK_FORMATS, type AttemptRecord, type ClaimedDelivery, type DeliveryRecord, type DeliveryStatus, type WebhookFormat, type WebhookSubscription } from '../webhooks/delivery.js';

type Time = number | Date;
/** Decodes text as the engine stored it; the identity where text is stored as is. */
export type TextDecoder = <T extends string | null>(s: T) => T;
const asStored: TextDecoder = (s) => s;

export interface PlantRow {
  id: bigint;
  name: string;
  tag: string | null;
  /** Present where the statement selects it. */
  version?: bigint | string;
}

export function plantOf(row: PlantRow, text: TextDecoder = asStored): PlantRecord {
  const id = BigInt(row.id);
  return row.tag === null ? { id, name: text(row.name) } : { id, name: text(row.name), tag: text(row.tag) };
}

/** A row read with its version (PostgreSQL may hand a BIGINT over as text). */
export function versionedPlantOf(row: PlantRow, text: TextDecoder = asStored): VersionedPlant {
  return { ...plantOf(row, text), version: BigInt(row.version!) };
}

export interface TokenRow {
  id: string;
  name: string;
  token_hash: string;
  scopes: string;
  created_at: Time;
  last_used_at: Time | null;
  expires_at: Time | null;
  revoked_at: Time | null;
}

export function tokenOf(row: TokenRow, text: TextDecoder = asStored): TokenRecord {
  return {
    id: row.id,
    name: text(row.name),
    hash: row.token_hash,
    scopes: row.scopes.split(' ').filter(Boolean),
    createdAt: new Date(row.created_at),
    lastUsedAt: dateOf(row.last_used_at),
    expiresAt: dateOf(row.expires_at),
    revokedAt: dateOf(row.revoked_at),
  };
}

/** A ticket with its token's state (no token row: a JWT's ticket, or its token was deleted); the engines bind `?` or `$1`. */
export const TICKET_BY_HASH_SQL = (param: string) => `
  SELECT t.ticket_hash, t.token_id, t.expires_at, a.id AS token_found, a.revoked_at AS token_revoked_at, a.expires_at AS token_expires_at
  FROM event_tickets t LEFT JOIN api_tokens a ON a.id = t.token_id WHERE t.ticket_hash = ${param}`;

export interface TicketRow {
  ticket_hash: string;
  token_id: string;
  expires_at: Time;
  token_found: string | null;
  token_revoked_at: Time | null;
  token_expires_at: Time | null;
}

export function ticketOf(row: TicketRow): StoredTicket {
  return {
    hash: row.ticket_hash,
    tokenId: row.token_id,
    expiresAt: new Date(row.expires_at),
    token: row.token_found === null ? null : { revokedAt: dateOf(row.token_revoked_at), expiresAt: dateOf(row.token_expires_at) },
  };
}

export interface SubscriptionRow {
  id: string;
  url: string;
  description: string | null;
  /** Space-separated event types. */
  events: string;
  format: string;
  secret: string;
  created_at: Time;
  disabled_at: Time | null;
  disabled_reason: string | null;
}

export function subscriptionOf(row: SubscriptionRow, text: TextDecoder = asStored): WebhookSubscription {
  return {
    id: row.id,
    url: row.url,
    description: text(row.description),
    events: row.events.split(' '),
    format: formatOf(row.format),
    secret: row.secret,
    createdAt: new Date(row.created_at),
    disabledAt: dateOf(row.disabled_at),
    disabledReason: text(row.disabled_reason),
  };
}

export interface DeliveryRow {
  id: string;
  event_id: string;
  subscription_id: string;
  status: DeliveryStatus;
  next_attempt_at: Time | null;
  created_at: Time;
}

export interface AttemptRow {
  delivery_id: string;
  attempt: number;
  at: Time;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
  /** JSON (attemptRequestText); NULL before schema version 15 or when nothing was sent. */
  request?: string | null;
  /** JSON (attemptResponseText); NULL before schema version 15 or when no answer came. */
  response?: string | null;
}

/** An attempt's request as stored in webhook_attempts.request. */
export function attemptRequestText(a: AttemptRecord): string | null {
  return a.request ? JSON.stringify({ headers: a.request.headers, body: a.request.body }) : null;
}

/** An attempt's answer as stored in webhook_attempts.response. */
export function attemptResponseText(a: AttemptRecord): string | null {
  return a.response ? JSON.stringify({ headers: a.response.headers, excerpt: a.response.excerpt, truncated: a.response.truncated }) : null;
}

function headersOf(v: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) if (typeof x === 'string') out[k] = x;
  return out;
}

/** The stored request and answer of an attempt, as its record's members (absent where NULL). */
function attemptDetail(request: string | null | undefined, response: string | null | undefined): Pick<AttemptRecord, 'request' | 'response'> {
  const detail: Pick<AttemptRecord, 'request' | 'response'> = {};
  if (request) {
    const r = JSON.parse(request) as { headers?: unknown; body?: unknown };
    detail.request = { headers: headersOf(r.headers), body: typeof r.body === 'string' ? r.body : '' };
  }
  if (response) {
    const r = JSON.parse(response) as { headers?: unknown; excerpt?: unknown; truncated?: unknown };
    detail.response = { headers: headersOf(r.headers), excerpt: typeof r.excerpt === 'string' ? r.excerpt : '', truncated: r.truncated === true };
  }
  return detail;
}

/** Deliveries with their attempts (`attempts` of any of them, in attempt order). */
export function deliveriesOf(rows: readonly DeliveryRow[], attempts: readonly AttemptRow[], text: TextDecoder = asStored): DeliveryRecord[] {
  const byDelivery = new Map<string, AttemptRecord[]>();
  for (const a of attempts) {
    const list = byDelivery.get(a.delivery_id) ?? [];
    list.push({
      at: new Date(a.at),
      statusCode: a.status_code,
      error: text(a.error),
      durationMs: a.duration_ms,
      ...attemptDetail(text(a.request ?? null), text(a.response ?? null)),
    });
    byDelivery.set(a.delivery_id, list);
  }
  return rows.map((r) => ({
    id: r.id,
    eventId: r.event_id,
    subscriptionId: r.subscription_id,
    status: r.status,
    nextAttemptAt: r.status === 'pending' && r.next_attempt_at !== null ? new Date(r.next_attempt_at) : null,
    createdAt: new Date(r.created_at),
    attempts: byDelivery.get(r.id) ?? [],
  }));
}

export interface ClaimRow {
  id: string;
  event_id: string;
  subscription_id: string;
  attempt_count: number;
  url: string;
  secret: string;
  payload: string;
  event_type: string;
  event_created_at: Time;
  format: string;
  /** The event's write's trace context (tracing/spans.ts traceText); NULL when written untraced. */
  trace_context: string | null;
}

export function claimedOf(r: ClaimRow): ClaimedDelivery {
  return {
    deliveryId: r.id,
    eventId: r.event_id,
    subscriptionId: r.subscription_id,
    url: r.url,
    secret: r.secret,
    payload: r.payload,
    eventType: r.event_type,
    eventCreatedAt: new Date(r.event_created_at),
    format: formatOf(r.format),
    attemptCount: r.attempt_count,
    ...(r.trace_context ? { trace: r.trace_context } : {}),
  };
}

/** A stored format; one this version does not know (written by a newer one) is sent plain. */
function formatOf(stored: string): WebhookFormat {
  return (WEBHOOK_FORMATS as readonly string[]).includes(stored) ? (stored as WebhookFormat) : 'plain';
}

function dateOf(v: Time | null): Date | null {
  return v === null ? null : new Date(v);
}
