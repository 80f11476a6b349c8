// The identity provider's key set (JWKS), fetched over HTTP. jose's remote set caches it, refetches it for
// an unknown `kid` at most once per cooldown and shares one fetch among concurrent callers; this adds what
// a production fetch also needs: a size bound, a pause after a failed fetch (a down IdP is not asked on
// every request), and keeping the last good keys while the IdP is unreachable.
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createLocalJWKSet, createRemoteJWKSet, customFetch, errors, type JWTVerifyGetKey } from 'jose';

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
}

/** A fetch failure that is not the token's fault: the caller may say so (and not blame the client). */
export class JwksUnavailableError extends Error {
  override name = 'JwksUnavailableError';
}

export function createJwksSource(options: JwksSourceOptions): JWTVerifyGetKey {
  const maxBytes = options.maxBytes ?? 256 * 1024;
  const retryAfterFailureMs = options.retryAfterFailureMs ?? Math.min(options.cooldownMs, 2_000);
  let failedAt = -Infinity;

  // jose asks for the document through this; it gets a 200 with a parsed-and-checked JWKS, or an error.
  async function boundedFetch(url: string, init: RequestInit): Promise<Response> {
    if (Date.now() - failedAt < retryAfterFailureMs) throw new JwksUnavailableError('the key set could not be fetched recently; not retrying yet');
    try {
      const body = await getAtMost(new URL(url), init, maxBytes);
      let doc: unknown;
      try {
        doc = JSON.parse(body.toString('utf8'));
      } catch {
        throw new JwksUnavailableError('the key set is not JSON');
      }
      if (!Array.isArray((doc as { keys?: unknown } | null)?.keys)) throw new JwksUnavailableError('the key set has no "keys" array');
      return new Response(body, { status: 200, headers: { 'content-type': 'application/json' } });
    } catch (err) {
      failedAt = Date.now();
      const error = err instanceof Error ? err : new Error(String(err));
      options.onFetchError?.(error);
      throw error;
    }
  }

  const remote = createRemoteJWKSet(options.url, {
    timeoutDuration: options.timeoutMs,
    cooldownDuration: options.cooldownMs,
    cacheMaxAge: options.maxAgeMs ?? 600_000,
    [customFetch]: boundedFetch,
  });

  return async (header, token) => {
    try {
      return await remote(header, token);
    } catch (err) {
      if (!isFetchFailure(err)) throw err;
      // Stale keys beat no keys: a key the IdP still served last time is still the IdP's key.
      const last = remote.jwks();
      if (last) return createLocalJWKSet(last)(header, token);
      throw new JwksUnavailableError('the key set is unavailable', { cause: err });
    }
  };
}

/** Fetch and parse failures, as opposed to "no key for this token" or a bad token. */
function isFetchFailure(err: unknown): boolean {
  if (err instanceof errors.JWKSNoMatchingKey || err instanceof errors.JWKSMultipleMatchingKeys) return false;
  if (err instanceof errors.JWKSTimeout || err instanceof errors.JWKSInvalid || err instanceof JwksUnavailableError) return true;
  // jose's own "expected 200" and "not JSON", fetch's TypeError for a refused connection, an abort.
  return (err instanceof errors.JOSEError && err.code === 'ERR_JOSE_GENERIC') || err instanceof TypeError || (err as Error)?.name === 'AbortError' || (err as Error)?.name === 'TimeoutError';
}

/**
 * GET with node:http(s) rather than fetch: the body is counted as it arrives and dropped past `maxBytes`,
 * redirects are not followed, and jose's deadline (`init.signal`) covers the whole exchange.
 */
function getAtMost(url: URL, init: RequestInit, maxBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const fail = (err: Error) => {
      if (settled) return;
      settled = true;
      req.destroy();
      reject(err);
    };
    const headers = Object.fromEntries(new Headers(init.headers).entries());
    const req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, { method: 'GET', headers }, (res) => {
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
    const signal = init.signal;
    if (signal) {
      if (signal.aborted) return fail(new JwksUnavailableError('the key set did not arrive in time'));
      signal.addEventListener('abort', () => fail(new JwksUnavailableError('the key set did not arrive in time')), { once: true });
    }
    req.end();
  });
}
