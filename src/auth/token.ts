// The API token record and the store port every engine implements for tokens.

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

export interface TokenStore {
  insertToken(token: TokenRecord): Promise<void>;
  findTokenByHash(hash: string): Promise<TokenRecord | undefined>;
  listTokens(): Promise<TokenRecord[]>;
  /** Up to `limit` tokens in the order they were made (listTokens' order), after the token `after` when given. */
  tokensPage(limit: number, after?: string): Promise<TokenRecord[]>;
  findTokenById(id: string): Promise<TokenRecord | undefined>;
  /** Marks a token revoked; false when no such token exists or it was already revoked. */
  revokeToken(id: string, at: Date): Promise<boolean>;
  countTokens(): Promise<number>;
  /** Records last-used times; best effort, batched by the caller. */
  touchTokens(lastUsed: ReadonlyMap<string, Date>): Promise<void>;
}
