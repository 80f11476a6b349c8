// The JWT verifier the configuration asks for, loaded only then: jose and the verifier stay out of a process
// whose configuration turns JWTs off.
import { systemClock, type Clock } from '../kit/clock.js';
import type { JwtKeySource, JwtVerifier } from './jwt.js';

/** Builds the verifier the configuration asks for, or undefined when JWTs are off. */
export async function jwtVerifierFromConfig(
  config: {
    jwtJwksUrl: string;
    jwtPublicKey: string;
    jwtHs256Secret: string;
    jwtIssuer: string;
    jwtAudience: readonly string[];
    jwtClockSkewMs: number;
    jwtJwksTimeoutMs: number;
    jwtJwksCooldownMs: number;
    tokenCacheTtlMs: number;
  },
  log?: { onJwksError?: (err: Error) => void; onUnexpectedError?: (err: unknown) => void },
  clock: Clock = systemClock,
): Promise<JwtVerifier | undefined> {
  const key: JwtKeySource | undefined = config.jwtJwksUrl
    ? { kind: 'jwks', url: config.jwtJwksUrl, timeoutMs: config.jwtJwksTimeoutMs, cooldownMs: config.jwtJwksCooldownMs }
    : config.jwtPublicKey
      ? { kind: 'pem', pem: config.jwtPublicKey }
      : config.jwtHs256Secret
        ? { kind: 'hmac', secret: config.jwtHs256Secret }
        : undefined;
  if (!key) return undefined;
  const { createJwtVerifier } = await import('./jwt-verifier.js');
  return createJwtVerifier({
    key,
    issuer: config.jwtIssuer || undefined,
    audience: config.jwtAudience,
    clockSkewMs: config.jwtClockSkewMs,
    cacheTtlMs: config.tokenCacheTtlMs,
    clock,
    ...log,
  });
}
