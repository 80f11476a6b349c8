// Secrets as the tests handle them: WEBHOOK_SECRET_KEYS keys (src/webhooks/secret-box.ts), a webhook secret as
// the database holds it, and the hash a token's secret is stored as.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { createStore } from '../../src/storage/open-store.js';
import { parseSecretKeys } from '../../src/webhooks/secret-box.js';

/** A new key for WEBHOOK_SECRET_KEYS: 32 random bytes in base64. */
export const newKey = (): string => randomBytes(32).toString('base64');

/** The id a key goes by in what it seals (`enc:v1:<id>:...`). */
export const keyId = (key: string): string => parseSecretKeys(key)[0]!.id;

/** A subscription's secret column as stored, read through a store that neither seals nor opens. */
export async function storedSecret(databaseUrl: string, id: string): Promise<string> {
  const raw = createStore(databaseUrl);
  try {
    const sub = await raw.webhooks.getSubscription(id);
    assert.ok(sub, `subscription ${id} is stored`);
    return sub.secret;
  } finally {
    await raw.close();
  }
}

/** SHA-256 of a UTF-8 string, in hex. */
export const sha256 = (s: string): string => createHash('sha256').update(s, 'utf8').digest('hex');
