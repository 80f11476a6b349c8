// Standard Webhooks signatures (https://www.standardwebhooks.com): `whsec_` secrets and
// `v1,<base64 HMAC-SHA256 over "{webhook-id}.{webhook-timestamp}.{body}">`, over the exact body bytes sent.
import { createHmac, randomBytes } from 'node:crypto';

export const SECRET_PREFIX = 'whsec_';
/** The spec asks for 24 to 64 random bytes; 32 is HMAC-SHA256's block-independent sweet spot. */
const SECRET_BYTES = 32;

/** A new signing secret: `whsec_` + standard base64 (padded) of 32 random bytes. */
export function generateWebhookSecret(): string {
  return SECRET_PREFIX + randomBytes(SECRET_BYTES).toString('base64');
}

/** The HMAC key of a secret: the base64-decoded part after `whsec_`. Throws on a malformed secret. */
export function secretKey(secret: string): Buffer {
  if (!secret.startsWith(SECRET_PREFIX)) throw new Error('a webhook secret starts with whsec_');
  const encoded = secret.slice(SECRET_PREFIX.length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) throw new Error('a webhook secret is whsec_ followed by base64');
  const key = Buffer.from(encoded, 'base64');
  if (key.length < 16) throw new Error('a webhook secret holds at least 16 bytes');
  return key;
}

/** The `webhook-signature` header value for one attempt. `body` is the exact bytes sent (a string is UTF-8). */
export function sign(secret: string, msgId: string, timestampSeconds: number, body: string | Buffer): string {
  if (!Number.isSafeInteger(timestampSeconds)) throw new Error('the timestamp is whole unix seconds');
  const mac = createHmac('sha256', secretKey(secret));
  mac.update(`${msgId}.${timestampSeconds}.`, 'utf8');
  mac.update(typeof body === 'string' ? Buffer.from(body, 'utf8') : body);
  return 'v1,' + mac.digest('base64');
}
