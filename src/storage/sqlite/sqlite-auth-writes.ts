// The auth writes on SQLite, as the writer's commands (write-commands.ts) run them: API tokens and stream
// tickets, single statements or one small transaction.
import type Database from 'better-sqlite3';
import type { TokenRecord } from '../../auth/token.js';
import type { TicketRecord } from '../../auth/stream-tickets.js';

export function tokenWrites(db: Database.Database) {
  const insert = db.prepare(
    'INSERT INTO api_tokens (id, name, token_hash, scopes, created_at, last_used_at, expires_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
  );
  const touch = db.prepare('UPDATE api_tokens SET last_used_at = max(coalesce(last_used_at, 0), ?) WHERE id = ?');
  return {
    insert: (t: TokenRecord) =>
      insert.run(t.id, t.name, t.hash, t.scopes.join(' '), t.createdAt.getTime(), ms(t.lastUsedAt), ms(t.expiresAt), ms(t.revokedAt)),
    revoke: db.prepare('UPDATE api_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL'),
    touch: db.transaction((lastUsed: readonly (readonly [string, Date])[]) => {
      for (const [id, at] of lastUsed) touch.run(at.getTime(), id);
    }),
  };
}

/** A stream ticket, in the transaction that removes the expired ones. */
export function ticketWrites(db: Database.Database) {
  const insert = db.prepare('INSERT INTO event_tickets (ticket_hash, token_id, expires_at) VALUES (?, ?, ?)');
  const removeExpired = db.prepare('DELETE FROM event_tickets WHERE expires_at < ?');
  return db.transaction((t: TicketRecord, expiredBefore: Date) => {
    removeExpired.run(expiredBefore.getTime());
    insert.run(t.hash, t.tokenId, t.expiresAt.getTime());
  });
}

function ms(d: Date | null): number | null {
  return d ? d.getTime() : null;
}
