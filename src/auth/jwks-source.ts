// The identity provider's key set (JWKS), fetched over HTTP and cached: refetched when older than its
// maximum age, and for an unknown `kid` at most once per cooldown, with one fetch shared among concurrent
// callers. Also what a production fetch needs: a size bound, a pause after a failed fetch (a down IdP is not
// asked on every request), and keeping the last good keys while the IdP is unreachable. Written here rather
// than with jose's remote set so that every age is read from the injected clock.
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createLocalJWKSet, errors, type JSONWebKeySet, type JWTVerifyGetKey } from 'jose';
import { systemClock, type Clock } from '../kit/clock.js';

export interface JwksSourceOptions {
  url: URL;
  /** Deadline of one fetch, body included. */
  timeoutMs: number;
  /** Least time between two fetches caused by unknown `kid`s. */
  cooldownMs: number;
  /** Keys are refetched when older than this. */
  maxAgeMs?: number;
  /** Largest accepted JWKS document. */
  maxBytes?: number;
  /** After a failed fetch, no new one is tried for this long. */
  retryAfterFailureMs?: number;
  /** Told about every failed fetch (at most one per `retryAfterFailureMs`). */
  onFetchError?: (err: Error) => void;
  clock?: Clock;
}

/** A fetch failure that is not the token's fault: the caller may say so (and not blame the client). */
export class JwksUnavailableError extends Error {
  override name = 'JwksUnavailableError';
}

const REQUEST_HEADERS = { accept: 'application/json, application/jwk-set+json', 'user-agent': 'plant-store' };

export function createJwksSource(options: JwksSourceOptions): JWTVerifyGetKey {
  const clock = options.clock ?? systemClock;
  const maxBytes = options.maxBytes ?? 256 * 1024;
  const maxAgeMs = options.maxAgeMs ?? 600_000;
  const retryAfterFailureMs = options.retryAfterFailureMs ?? Math.min(options.cooldownMs, 2_000);
  let keys: ReturnType<typeof createLocalJWKSet> | undefined;
  let fetchedAt = -Infinity;
  let failedAt = -Infinity;
  let pending: Promise<void> | undefined;

  // The last good keys stay in `keys` until a fetch brings a parsed-and-checked set.
  async function fetchKeys(): Promise<void> {
    if (clock.now() - failedAt < retryAfterFailureMs) throw new JwksUnavailableError('the key set could not be fetched recently; not retrying yet');
    try {
      const body = await getAtMost(options.url, AbortSignal.timeout(options.timeoutMs), maxBytes);
      let doc: unknown;
      try {
        doc = JSON.parse(body.toString('utf8'));
      } catch {
        throw new JwksUnavailableError('the key set is not JSON');
      }
      if (!Array.isArray((doc as { keys?: unknown } | null)?.keys)) throw new JwksUnavailableError('the key set has no "keys" array');
      keys = createLocalJWKSet(doc as JSONWebKeySet);
      fetchedAt = clock.now();
    } catch (err) {
      failedAt = clock.now();
      const error = err instanceof Error ? err : new Error(String(err));
      options.onFetchError?.(error);
      throw error;
    }
  }

  function reload(): Promise<void> {
    return (pending ??= fetchKeys().finally(() => {
      pending = undefined;
    }));
  }

  return async (header, token) => {
    try {
      if (!keys || clock.now() - fetchedAt >= maxAgeMs) await reload();
      try {
        return await keys!(header, token);
      } catch (err) {
        // An unknown kid may be a key the IdP rotated in since: look again, at most once per cooldown.
        if (!(err instanceof errors.JWKSNoMatchingKey) || clock.now() - fetchedAt < options.cooldownMs) throw err;
        await reload();
        return await keys!(header, token);
      }
    } catch (err) {
      if (!isFetchFailure(err)) throw err;
      // Stale keys beat no keys: a key the IdP still served last time is still the IdP's key.
      if (keys) return keys(header, token);
      throw new JwksUnavailableError('the key set is unavailable', { cause: err });
    }
  };
}

/** Fetch and parse failures, as opposed to "no key for this token" or a bad token. */
function isFetchFailure(err: unknown): boolean {
  return err instanceof JwksUnavailableError || err instanceof errors.JWKSInvalid;
}

/**
 * GET with node:http(s) rather than fetch: the body is counted as it arrives and dropped past `maxBytes`,
 * redirects are not followed, and the deadline (`signal`) covers the whole exchange.
 */
function getAtMost(url: URL, signal: AbortSignal, maxBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const fail = (err: Error) => {
      if (settled) return;
      settled = true;
      req.destroy();
      reject(err);
    };
    // agent: false, a connection per fetch: fetches are minutes apart, and a pooled keep-alive socket the IdP
    // has since closed would fail the fetch with ECONNRESET instead of reaching the IdP.
    const req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, { method: 'GET', headers: REQUEST_HEADERS, agent: false }, (res) => {
      if (res.statusCode !== 200) return fail(new JwksUnavailableError(`the key set URL answered HTTP ${res.statusCode}`));
      if (Number(res.headers['content-length'] ?? 0) > maxBytes) return fail(new JwksUnavailableError(`the key set is larger than ${maxBytes} bytes`));
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxBytes) fail(new JwksUnavailableError(`the key set is larger than ${maxBytes} bytes`));
        else chunks.push(chunk);
      });
      res.on('end', () => {
        if (settled) return;
        settled = true;
        resolve(Buffer.concat(chunks));
      });
      res.on('error', fail);
      res.on('close', () => fail(new JwksUnavailableError('the key set connection closed early')));
    });
    req.on('error', (err) => fail(new JwksUnavailableError(`the key set could not be fetched: ${(err as NodeJS.ErrnoException).code ?? err.message}`, { cause: err })));
    if (signal.aborted) return fail(new JwksUnavailableError('the key set did not arrive in time'));
    signal.addEventListener('abort', () => fail(new JwksUnavailableError('the key set did not arrive in time')), { once: true });
    req.end();
  });
}
