// SQLite schema history. Append only: a released migration is never edited, a change is a new version.

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'plants and api tokens',
    sql: `
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
  },
];
