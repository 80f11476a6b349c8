// Token lifecycle and verification. A short cache keeps the store off the hot path; its TTL bounds how
// long a revocation takes to reach this process. Last-used times are kept in memory and written in batches.
import { systemClock, type Clock } from '../kit/clock.js';
import type { TokenRecord, TokenStore } from './token.js';
import { generateSecret, generateTokenId, hashSecret, looksLikeToken, sameHash, type Scope } from './tokens.js';

export type Verification =
  | { ok: true; token: TokenRecord }
  | { ok: false; reason: 'unknown' | 'expired' | 'revoked' };

export interface TokenService {
  create(input: { name: string; scopes: Scope[]; expiresAt?: Date | null }): Promise<{ token: TokenRecord; secret: string }>;
  list(): Promise<TokenRecord[]>;
  /** Up to `limit` tokens in the order they were made, after the token `after` names. */
  page(limit: number, after?: string): Promise<TokenRecord[]>;
  get(id: string): Promise<TokenRecord | undefined>;
  /** False when no such token exists or it was already revoked. Clears this process's cache at once. */
  revoke(id: string): Promise<boolean>;
  /** Answered at once (no promise) when the token's record is cached, as it is for nearly every request. */
  verify(secret: string): Verification | Promise<Verification>;
  /** verify's verdict where the token's record is cached; undefined where it would have to be read from the store. */
  verifyCached(secret: string): Verification | undefined;
  /** Writes the last-used times gathered since the previous call. */
  flushLastUsed(): Promise<void>;
}

export interface TokenServiceOptions {
  cacheTtlMs?: number;
  /** Bound on cached tokens, so a flood of distinct valid tokens cannot grow memory without limit. */
  cacheSize?: number;
  /** Reads the time for expiry, the cache and the created, revoked and last-used times. */
  clock?: Clock;
}

const UNKNOWN: Verification = Object.freeze({ ok: false, reason: 'unknown' });

export function createTokenService(store: TokenStore, options: TokenServiceOptions = {}): TokenService {
  const ttl = options.cacheTtlMs ?? 2_000;
  const cacheSize = options.cacheSize ?? 10_000;
  // Milliseconds on the request path: a Date per verification was measurable garbage.
  const clock = options.clock ?? systemClock;
  const cache = new Map<string, { token: TokenRecord; until: number }>();
  let lastUsed = new Map<string, number>();

  async function lookup(hash: string, t: number): Promise<TokenRecord | undefined> {
    const token = await store.findTokenByHash(hash);
    // Defence in depth: the index found the row by hash; compare again without early exit.
    if (!token || !sameHash(token.hash, hash)) {
      cache.delete(hash);
      return undefined;
    }
    if (ttl > 0) {
      cache.delete(hash);
      if (cache.size >= cacheSize) cache.delete(cache.keys().next().value as string);
      cache.set(hash, { token, until: t + ttl });
    }
    return token;
  }

  function verifyCached(secret: string): Verification | undefined {
    // Malformed tokens are rejected without touching the store; the shape is public, so no leak.
    if (!looksLikeToken(secret)) return UNKNOWN;
    const hit = cache.get(hashSecret(secret));
    return hit && hit.until > clock.now() ? judge(hit.token) : undefined;
  }

  function judge(token: TokenRecord): Verification {
    const at = clock.now();
    if (token.revokedAt) return { ok: false, reason: 'revoked' };
    if (token.expiresAt && token.expiresAt.getTime() <= at) return { ok: false, reason: 'expired' };
    lastUsed.set(token.id, at);
    return { ok: true, token };
  }

  return {
    async create({ name, scopes, expiresAt = null }) {
      const secret = generateSecret();
      const token: TokenRecord = {
        id: generateTokenId(),
        name,
        hash: hashSecret(secret),
        scopes: [...scopes],
        createdAt: new Date(clock.now()),
        lastUsedAt: null,
        expiresAt,
        revokedAt: null,
      };
      await store.insertToken(token);
      return { token, secret };
    },

    list: () => store.listTokens(),
    page: (limit, after) => store.tokensPage(limit, after),
    get: (id) => store.findTokenById(id),

    async revoke(id) {
      const done = await store.revokeToken(id, new Date(clock.now()));
      cache.clear();
      return done;
    },

    verify(secret) {
      // A cached record is judged at once: an async verification cost every request its promises.
      return verifyCached(secret) ?? lookup(hashSecret(secret), clock.now()).then((token) => (token ? judge(token) : UNKNOWN));
    },

    verifyCached,

    async flushLastUsed() {
      if (lastUsed.size === 0) return;
      const batch = new Map([...lastUsed].map(([id, at]) => [id, new Date(at)]));
      lastUsed = new Map();
      await store.touchTokens(batch);
    },
  };
}
