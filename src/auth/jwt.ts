// What the rest of the service knows of JWT bearer tokens: their shape, a verified one, the verifier's face.
// The verifier itself (jwt-verifier.ts, on jose) is loaded only when JWTs are on (jwt-config.ts), so a process
// that serves opaque tokens alone never holds it.

/** Where the signing keys come from: exactly one of these is configured. */
export type JwtKeySource =
  | { kind: 'jwks'; url: string; timeoutMs: number; cooldownMs: number; maxAgeMs?: number }
  | { kind: 'pem'; pem: string }
  | { kind: 'hmac'; secret: string };

/** A verified token as the bearer guard sees it. */
export interface JwtIdentity {
  /** `jwt_` and a hash of `iss` and `sub`: stable per subject, safe for logs and metrics. */
  id: string;
  scopes: string[];
  /** Its `exp`: a stream ticket made with it never outlives it. */
  expiresAt: Date;
}

export type JwtVerification =
  | { ok: true; token: JwtIdentity }
  | { ok: false; reason: 'expired' | 'unknown' | 'jwks_unavailable'; description: string };

export interface JwtVerifier {
  verify(token: string): Promise<JwtVerification>;
}

/** Three base64url segments (the last may be empty, as in `alg: none`); opaque tokens start with `pst_`. */
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

export function looksLikeJwt(token: string): boolean {
  return JWT_SHAPE.test(token);
}
