// Which JWS algorithms a configured key may verify. Pinning them is what stops algorithm confusion (an
// HS256 token "signed" with a public key as the secret) and `alg: none`.
import { createHash, createPublicKey, type KeyObject } from 'node:crypto';

/** Asymmetric algorithms a JWKS may serve keys for; never `none` and never HMAC (a JWKS is public). */
export const JWKS_ALGORITHMS: readonly string[] = Object.freeze([
  'RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519',
]);

/** The only algorithm an HMAC secret is used with. */
export const HMAC_ALGORITHMS: readonly string[] = Object.freeze(['HS256']);

/** RFC 7518 §3.2: an HS256 key must be at least as long as the hash output. */
export const MIN_HMAC_SECRET_BYTES = 32;

const EC_CURVES: Record<string, string> = { prime256v1: 'ES256', secp384r1: 'ES384', secp521r1: 'ES512' };

/** The algorithms that fit a public key; throws a message for operators when the key cannot be used. */
export function algorithmsForKey(key: KeyObject): string[] {
  if (key.type !== 'public') throw new Error('expected a public key');
  const details = key.asymmetricKeyDetails ?? {};
  switch (key.asymmetricKeyType) {
    case 'rsa':
    case 'rsa-pss':
      if ((details.modulusLength ?? 0) < 2048) throw new Error(`an RSA key needs at least 2048 bits, this one has ${details.modulusLength}`);
      return key.asymmetricKeyType === 'rsa' ? ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512'] : ['PS256', 'PS384', 'PS512'];
    case 'ec': {
      const alg = EC_CURVES[details.namedCurve ?? ''];
      if (!alg) throw new Error(`unsupported EC curve ${details.namedCurve}; use P-256, P-384 or P-521`);
      return [alg];
    }
    case 'ed25519':
      return ['EdDSA', 'Ed25519'];
    default:
      throw new Error(`unsupported key type ${key.asymmetricKeyType}; use RSA, EC (P-256, P-384, P-521) or Ed25519`);
  }
}

/**
 * Parses a PEM public key (SPKI or PKCS#1) and checks it can verify JWTs. A private key is refused: it does
 * not belong in this service's configuration.
 */
export function parsePublicKeyPem(pem: string): KeyObject {
  if (/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(pem)) throw new Error('this is a private key; configure the public key only');
  let key: KeyObject;
  try {
    key = createPublicKey(pem);
  } catch {
    throw new Error('not a PEM public key (expected -----BEGIN PUBLIC KEY-----)');
  }
  algorithmsForKey(key);
  return key;
}

/** A short fingerprint of a public key (SHA-256 of its SPKI), to show which key is configured. */
export function keyFingerprint(key: KeyObject): string {
  const der = key.export({ type: 'spki', format: 'der' });
  return 'sha256:' + createHash('sha256').update(der).digest('hex').slice(0, 16);
}
