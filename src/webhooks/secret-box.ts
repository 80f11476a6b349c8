// Webhook signing secrets at rest. Signing needs each secret in clear, so it cannot be hashed like a token:
// it is encrypted with AES-256-GCM (node:crypto) under keys from WEBHOOK_SECRET_KEYS, bound to its
// subscription id (the GCM associated data), so a row's ciphertext copied onto another row does not open.
// The first key encrypts; the others only decrypt, which is how a key is rotated. Only `serve` and
// `plant-store secrets rotate` encrypt again every secret not under the first key (sealStoredSecrets): a
// process that merely reads (any other command) must not move secrets to a key a running server lacks.
// The store port is wrapped (sealedWebhookStore), so the engines keep storing and returning text. Only a
// claim opens secrets (to sign), and one that does not open fails that delivery alone, never the batch.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { ClaimedDelivery, WebhookStore } from './delivery.js';

/** Sealed secrets start with this; a clear one starts with whsec_. */
const SEALED = 'enc:v1:';
const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** One key of WEBHOOK_SECRET_KEYS and the id written beside what it seals. */
export interface SecretKey {
  /** 8 base64url characters of the key's SHA-256: names the key without revealing it. */
  id: string;
  key: Buffer;
}

/** A secret that cannot be opened with the keys given: its deliveries fail (and retry), and `serve` refuses to start. */
export class SecretKeyError extends Error {
  override name = 'SecretKeyError';
}

function keyId(key: Buffer): string {
  return createHash('sha256').update('plant-store webhook secret key\n').update(key).digest('base64url').slice(0, 8);
}

/**
 * WEBHOOK_SECRET_KEYS: comma-separated keys, each the standard or URL-safe base64 of 32 random bytes
 * (`openssl rand -base64 32`). Throws an Error that says what is wrong, never echoing a key.
 */
export function parseSecretKeys(raw: string): readonly SecretKey[] {
  const entries = raw.split(',').map((e) => e.trim()).filter(Boolean);
  const keys = entries.map((entry, i) => {
    const which = entries.length > 1 ? `key ${i + 1} of ${entries.length}` : 'the key';
    if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(entry)) throw new Error(`${which} is not base64 (make one with: openssl rand -base64 32)`);
    const key = Buffer.from(entry.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
    if (key.length !== KEY_BYTES) {
      throw new Error(`${which} holds ${key.length} bytes; each key is ${KEY_BYTES} random bytes in base64 (make one with: openssl rand -base64 32)`);
    }
    return { id: keyId(key), key };
  });
  const ids = new Set(keys.map((k) => k.id));
  if (ids.size !== keys.length) throw new Error('a key is listed twice');
  return Object.freeze(keys);
}

export interface SecretBox {
  /** Whether a key is configured: without one, secrets are stored in clear. */
  readonly encrypts: boolean;
  /** What to store for `secret`: sealed under the first key, or the secret itself when there is no key. */
  seal(subscriptionId: string, secret: string): string;
  /** The secret of a stored value (sealed or clear); throws SecretKeyError when its key is not configured. */
  open(subscriptionId: string, stored: string): string;
  /** True when `stored` is what seal would store now: under the first key, or in clear when there is none. */
  isCurrent(stored: string): boolean;
}

/** The id of the key a stored secret is sealed under, or null for a secret stored in clear. */
export function sealedUnder(stored: string): string | null {
  return stored.startsWith(SEALED) ? (stored.slice(SEALED.length).split(':')[0] ?? '') : null;
}

export function createSecretBox(keys: readonly SecretKey[]): SecretBox {
  const first = keys[0];
  const byId = new Map(keys.map((k) => [k.id, k.key]));
  return {
    encrypts: first !== undefined,
    seal(subscriptionId, secret) {
      if (!first) return secret;
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', first.key, iv).setAAD(Buffer.from(subscriptionId, 'utf8'));
      const sealed = Buffer.concat([iv, cipher.update(secret, 'utf8'), cipher.final(), cipher.getAuthTag()]);
      return `${SEALED}${first.id}:${sealed.toString('base64url')}`;
    },
    open(subscriptionId, stored) {
      if (!stored.startsWith(SEALED)) return stored;
      const [id = '', data = ''] = stored.slice(SEALED.length).split(':');
      const key = byId.get(id);
      if (!key) {
        throw new SecretKeyError(
          `The signing secret of webhook subscription ${subscriptionId} is encrypted with key ${id}, which WEBHOOK_SECRET_KEYS does not hold. ` +
            `Add that key to WEBHOOK_SECRET_KEYS (after the first); \`plant-store secrets status\` shows the keys the stored secrets need.`,
        );
      }
      const bytes = Buffer.from(data, 'base64url');
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES)).setAAD(Buffer.from(subscriptionId, 'utf8'));
        decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
        return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)), decipher.final()]).toString('utf8');
      } catch {
        throw new SecretKeyError(`The signing secret of webhook subscription ${subscriptionId} does not decrypt with key ${id} (altered, or copied from another subscription).`);
      }
    },
    isCurrent(stored) {
      return first ? stored.startsWith(`${SEALED}${first.id}:`) : !stored.startsWith(SEALED);
    },
  };
}

/**
 * The store port with secrets sealed on the way in and opened by a claim, the one reader that signs; every
 * other method is the store's own (a Proxy, so methods added to the port later pass through unchanged).
 * Listed and fetched subscriptions keep their secret as stored: nothing that lists them shows or needs it,
 * so a secret under a key this process lacks never fails a listing.
 */
export function sealedWebhookStore(store: WebhookStore, box: SecretBox): WebhookStore {
  const overrides: Partial<WebhookStore> = {
    insertSubscription: (sub, admit) => store.insertSubscription({ ...sub, secret: box.seal(sub.id, sub.secret) }, admit),
    claimDueDeliveries: async (input) =>
      (await store.claimDueDeliveries(input)).map((c): ClaimedDelivery => {
        try {
          return { ...c, secret: box.open(c.subscriptionId, c.secret) };
        } catch (err) {
          if (!(err instanceof SecretKeyError)) throw err;
          // This delivery alone is not sent: the dispatcher records an attempt with this reason.
          return { ...c, secret: '', secretError: err.message };
        }
      }),
  };
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (Object.hasOwn(overrides, prop)) return overrides[prop as keyof WebhookStore];
      const value = Reflect.get(target, prop, receiver) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/**
 * Brings every stored secret under the first key (or, without keys, checks that none is sealed). Throws
 * SecretKeyError, before anything is changed, when a secret's key is missing. Returns how many it re-sealed.
 */
export async function sealStoredSecrets(store: WebhookStore, box: SecretBox): Promise<number> {
  const subs = await store.listSubscriptions();
  const stale = subs.filter((s) => !box.isCurrent(s.secret));
  // Every one opens before any is rewritten: a missing key stops the start-up with nothing half done.
  const clear = stale.map((s) => ({ id: s.id, stored: s.secret, secret: box.open(s.id, s.secret) }));
  if (!box.encrypts) return 0;
  let count = 0;
  // Compare-and-set: a secret changed meanwhile (by another process sealing it) is left as that one wrote it.
  for (const s of clear) if (await store.replaceSecret(s.id, s.stored, box.seal(s.id, s.secret))) count++;
  return count;
}
