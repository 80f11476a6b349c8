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
  createPlant(plant: PlantRecord): Promise<CreateOutcome>;
  getPlant(id: bigint): Promise<PlantRecord | undefined>;
  countPlants(): Promise<number>;

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
}
