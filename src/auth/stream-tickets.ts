// Stream tickets: what a browser's EventSource, which cannot send Authorization, puts in the URL of GET /events
// instead of a token. Short-lived, good for that one operation only, and stored as a hash like a token; a ticket
// dies with the token that made it (revoked, expired, deleted), which the store's read joins in.
import * as crypto from 'node:crypto';
import { systemClock, type Clock } from '../kit/clock.js';
import { hashSecret, sameHash } from './tokens.js';

export const TICKET_PREFIX = 'pse_';
const TICKET_SHAPE = /^pse_[A-Za-z0-9_-]{43}$/;

/** A ticket as stored: the secret's hash, the token it speaks for, and when it stops working. */
export interface TicketRecord {
  hash: string;
  /** The issuing token's id (`tok_...`), or a JWT's subject id (`jwt_...`, which has no record). */
  tokenId: string;
  expiresAt: Date;
}

/** A ticket as read back, with the state of its token's record: null when the token has none (a JWT's, or deleted). */
export interface StoredTicket extends TicketRecord {
  token: { revokedAt: Date | null; expiresAt: Date | null } | null;
}

/** What every engine implements for tickets. */
export interface TicketStore {
  /** Stores a ticket, and removes the tickets that expired before `expiredBefore` (so the table stays small). */
  insertTicket(ticket: TicketRecord, expiredBefore: Date): Promise<void>;
  findTicketByHash(hash: string): Promise<StoredTicket | undefined>;
}

/**
 * Who a ticket speaks for, as the bearer guard takes a principal: its token's id, the one scope it grants, and
 * the ticket's expiresAt, at which a stream it opened ends.
 */
export interface TicketPrincipal {
  id: string;
  scopes: readonly string[];
  expiresAt: Date;
}

export type TicketVerification =
  | { ok: true; token: TicketPrincipal }
  | { ok: false; reason: 'unknown' | 'expired' | 'revoked' };

/** The principal a request authenticated as, as the ticket operation needs it: its id, and when it expires. */
export interface TicketIssuer {
  id: string;
  /** An opaque token's expiry (null: none), a JWT's `exp`. */
  expiresAt?: Date | null;
}

export interface TicketService {
  /** A new ticket for `principal`, living `ttlMs` at most and never past the principal's own expiry. */
  issue(principal: TicketIssuer): Promise<{ ticket: string; expiresAt: Date }>;
  /** Answered at once (no promise) while the ticket's record is cached. */
  verify(ticket: string): TicketVerification | Promise<TicketVerification>;
}

export interface TicketServiceOptions {
  /** How long a ticket lives (EVENTS_TICKET_SECONDS), in ms. */
  ttlMs: number;
  /** How long a ticket's record is trusted before the store is asked again: bounds how long a revocation takes. */
  cacheTtlMs?: number;
  /** Bound on cached tickets. */
  cacheSize?: number;
  clock?: Clock;
}

/** A ticket's only scope: reading the feed (POST /events/tickets needs plants:read to make one). */
const SCOPES: readonly string[] = Object.freeze(['plants:read']);
const UNKNOWN: TicketVerification = Object.freeze({ ok: false, reason: 'unknown' });

export function looksLikeTicket(value: string): boolean {
  return TICKET_SHAPE.test(value);
}

export function createTicketService(store: TicketStore, options: TicketServiceOptions): TicketService {
  const clock = options.clock ?? systemClock;
  const cacheTtl = options.cacheTtlMs ?? 2_000;
  const cacheSize = options.cacheSize ?? 10_000;
  const cache = new Map<string, { ticket: StoredTicket; principal: TicketPrincipal; until: number }>();

  function judge(entry: { ticket: StoredTicket; principal: TicketPrincipal }): TicketVerification {
    const at = clock.now();
    const { ticket } = entry;
    if (ticket.expiresAt.getTime() <= at) return { ok: false, reason: 'expired' };
    // A token's ticket whose token record is gone (deleted) is as dead as a revoked one's.
    if (ticket.tokenId.startsWith('tok_') && !ticket.token) return { ok: false, reason: 'revoked' };
    if (ticket.token?.revokedAt) return { ok: false, reason: 'revoked' };
    if (ticket.token?.expiresAt && ticket.token.expiresAt.getTime() <= at) return { ok: false, reason: 'expired' };
    return { ok: true, token: entry.principal };
  }

  async function lookup(hash: string, t: number): Promise<TicketVerification> {
    const ticket = await store.findTicketByHash(hash);
    // Defence in depth, as for tokens: the index found the row by hash; compare again without early exit.
    if (!ticket || !sameHash(ticket.hash, hash)) {
      cache.delete(hash);
      return UNKNOWN;
    }
    const entry = { ticket, principal: { id: ticket.tokenId, scopes: SCOPES, expiresAt: ticket.expiresAt }, until: t + cacheTtl };
    if (cacheTtl > 0) {
      cache.delete(hash);
      if (cache.size >= cacheSize) cache.delete(cache.keys().next().value as string);
      cache.set(hash, entry);
    }
    return judge(entry);
  }

  return {
    async issue(principal) {
      const now = clock.now();
      const ticket = TICKET_PREFIX + crypto.randomBytes(32).toString('base64url');
      const own = principal.expiresAt?.getTime() ?? Number.POSITIVE_INFINITY;
      const expiresAt = new Date(Math.min(now + options.ttlMs, own));
      await store.insertTicket({ hash: hashSecret(ticket), tokenId: principal.id, expiresAt }, new Date(now));
      return { ticket, expiresAt };
    },

    verify(ticket) {
      // The shape is public: a value that cannot be a ticket never reaches the store.
      if (!looksLikeTicket(ticket)) return UNKNOWN;
      const hash = hashSecret(ticket);
      const t = clock.now();
      const hit = cache.get(hash);
      if (hit && hit.until > t) return judge(hit);
      return lookup(hash, t);
    },
  };
}
