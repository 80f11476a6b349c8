// A stand-in identity provider for JWT tests: locally generated keys, tokens minted with jose, and a JWKS
// served from a real HTTP server on 127.0.0.1 that counts its fetches and can rotate, fail or hang.
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestContext } from 'node:test';
import { exportJWK, exportSPKI, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose';

export interface SigningKey {
  kid: string;
  alg: string;
  privateKey: CryptoKey;
  publicKey: CryptoKey;
  /** The public key as a JWK with kid, alg and use. */
  jwk: JWK;
  /** The public key as PEM (SPKI). */
  pem: string;
}

export async function signingKey(alg: 'RS256' | 'ES256' | 'EdDSA', kid: string): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true, ...(alg === 'EdDSA' ? { crv: 'Ed25519' } : {}) });
  const jwk = { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' };
  return { kid, alg, privateKey, publicKey, jwk, pem: await exportSPKI(publicKey) };
}

export const ISSUER = 'https://idp.test/';
export const AUDIENCE = 'plant-store';

export interface MintOptions {
  /** Seconds from now; negative for a token already expired; null for none. Default 300. */
  expiresIn?: number | null;
  /** Seconds from now for `nbf`. */
  notBefore?: number;
  claims?: JWTPayload;
  /** Header fields to set or override (kid, alg, typ). */
  header?: Record<string, unknown>;
  issuer?: string | null;
  audience?: string | string[] | null;
  subject?: string | null;
}

/** Signs a token with `key` (a SigningKey or an HMAC secret); defaults: the test issuer, audience, sub and 5 min. */
export async function mint(key: SigningKey | { secret: Uint8Array | string; alg?: string; kid?: string }, options: MintOptions = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const payload: JWTPayload = { ...options.claims };
  if (options.issuer !== null) payload.iss = options.issuer ?? ISSUER;
  if (options.audience !== null) payload.aud = options.audience ?? AUDIENCE;
  if (options.subject !== null) payload.sub = options.subject ?? 'user-1';
  payload.iat = now;
  if (options.expiresIn !== null) payload.exp = now + (options.expiresIn ?? 300);
  if (options.notBefore !== undefined) payload.nbf = now + options.notBefore;
  const signing = 'secret' in key ? (typeof key.secret === 'string' ? new TextEncoder().encode(key.secret) : key.secret) : key.privateKey;
  const alg = 'secret' in key ? (key.alg ?? 'HS256') : key.alg;
  const kid = 'secret' in key ? key.kid : key.kid;
  return new SignJWT(payload).setProtectedHeader({ alg, ...(kid ? { kid } : {}), typ: 'JWT', ...options.header } as { alg: string }).sign(signing);
}

/** An unsigned token (`alg: none`, empty signature), as an attacker would send it. */
export function unsignedToken(payload: JWTPayload, header: Record<string, unknown> = {}): string {
  const part = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  return `${part({ alg: 'none', typ: 'JWT', ...header })}.${part(payload)}.`;
}

export interface JwksServer {
  url: string;
  /** GET requests answered so far. */
  fetches: () => number;
  /** Replace the served keys (key rotation at the IdP). */
  setKeys(keys: JWK[]): void;
  /** How the next requests are answered: the key set, an HTTP 500, a body over 1 MiB, or never. */
  setMode(mode: 'ok' | 'error' | 'huge' | 'hang'): void;
  close(): Promise<void>;
}

export async function startJwksServer(t: TestContext, keys: JWK[]): Promise<JwksServer> {
  let served = keys;
  let mode: 'ok' | 'error' | 'huge' | 'hang' = 'ok';
  let count = 0;
  const hanging = new Set<ServerResponse>();
  const server = createServer((req, res) => {
    count++;
    if (mode === 'hang') {
      hanging.add(res);
      return;
    }
    if (mode === 'error') {
      res.writeHead(500, { 'content-type': 'text/plain' }).end('down');
      return;
    }
    const body = mode === 'huge' ? JSON.stringify({ keys: served, padding: 'x'.repeat(1_100_000) }) : JSON.stringify({ keys: served });
    res.writeHead(200, { 'content-type': 'application/jwk-set+json' }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    for (const res of hanging) res.destroy();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  t.after(close);
  return {
    url: `http://127.0.0.1:${port}/.well-known/jwks.json`,
    fetches: () => count,
    setKeys: (next) => (served = next),
    setMode: (next) => (mode = next),
    close,
  };
}
