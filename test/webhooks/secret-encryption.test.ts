// Webhook signing secrets at rest (WEBHOOK_SECRET_KEYS): what the database holds is AES-256-GCM ciphertext
// bound to its subscription, deliveries are still signed with the secret the subscriber was given, secrets
// stored in clear are encrypted when the store is opened to re-encrypt (serve, secrets rotate), a rotation
// re-encrypts under the new first key, and a server refuses to start with a malformed key or without the key
// a stored secret needs.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { freshDatabaseUrl, runCli, startApp } from '../helpers/app.js';
import { openStore } from '../../src/storage/open-store.js';
import { createSecretBox, parseSecretKeys, SecretKeyError } from '../../src/webhooks/secret-box.js';
import { createWebhookService } from '../../src/webhooks/webhook-service.js';
import { startReceiver } from '../helpers/receiver.js';
import { newKey, storedSecret } from '../helpers/secrets.js';


/** Opens the store as serve does, with `keys` (comma-separated), and closes it again; returns how many secrets were re-encrypted. */
async function restart(databaseUrl: string, keys: string): Promise<number> {
  const { store, secrets } = await openStore(databaseUrl, { webhookSecretKeys: parseSecretKeys(keys), resealSecrets: true });
  await store.close();
  return secrets.resealed;
}

async function subscribeInStore(databaseUrl: string, keys: string): Promise<{ id: string; secret: string }> {
  const { store } = await openStore(databaseUrl, { webhookSecretKeys: parseSecretKeys(keys) });
  try {
    const { subscription, secret } = await createWebhookService(store.webhooks, { allowedHosts: ['127.0.0.1'] }).create({ url: 'http://127.0.0.1:9/hook' });
    return { id: subscription.id, secret };
  } finally {
    await store.close();
  }
}

function assertSealed(stored: string, secret: string): void {
  assert.match(stored, /^enc:v1:[A-Za-z0-9_-]{8}:[A-Za-z0-9_-]+$/);
  assert.ok(!stored.includes(secret.slice('whsec_'.length, 30)), 'no part of the secret is stored');
}

test('with a key, the database holds ciphertext and deliveries are signed with the secret POST /webhooks returned', async (t: TestContext) => {
  const keys = parseSecretKeys(newKey());
  const s = await startApp(t, { store: { webhookSecretKeys: keys }, config: { webhookAllowedHosts: ['127.0.0.1'] }, dispatcher: { pollMs: 200 }, backgroundDispatcher: false });
  const manager = (await s.tokens.create({ name: 'hooks', scopes: ['webhooks:manage', 'plants:read'] })).secret;
  let secret = '';
  const rx = await startReceiver(t, () => secret);
  const res = await fetch(`${s.url}/webhooks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${manager}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url: `${rx.url}/hook` }),
  });
  assert.equal(res.status, 201);
  const body = (await res.json()) as { id: string; secret: string };
  secret = body.secret;
  assertSealed(await storedSecret(s.databaseUrl, body.id), secret);

  assert.equal((await s.postPlant({ id: 1, name: 'fern' })).status, 200);
  await s.dispatcher.runOnce();
  await rx.until((r) => r.requests.length === 1);
  assert.equal(rx.requests[0]!.verifyError, undefined, 'the delivery verifies with the secret the subscriber was given');
  assert.deepEqual(rx.problems, []);
});

test('secrets stored in clear are encrypted at start-up; a rotation re-encrypts under the new first key; the old key can then go', async (t) => {
  const databaseUrl = await freshDatabaseUrl(t);
  const [k1, k2] = [newKey(), newKey()];
  const { id, secret } = await subscribeInStore(databaseUrl, '');
  assert.equal(await storedSecret(databaseUrl, id), secret, 'without a key the secret is stored in clear');

  assert.equal(await restart(databaseUrl, k1), 1);
  const underK1 = await storedSecret(databaseUrl, id);
  assertSealed(underK1, secret);
  assert.ok(underK1.startsWith(`enc:v1:${parseSecretKeys(k1)[0]!.id}:`));
  assert.equal(await restart(databaseUrl, k1), 0, 'nothing to do the second time');
  assert.equal(await storedSecret(databaseUrl, id), underK1);

  // Rotation: the new key first, the old one after it.
  assert.equal(await restart(databaseUrl, `${k2},${k1}`), 1);
  const underK2 = await storedSecret(databaseUrl, id);
  assert.ok(underK2.startsWith(`enc:v1:${parseSecretKeys(k2)[0]!.id}:`));

  // The old key is no longer needed; the secret opens to what the subscriber holds.
  assert.equal(createSecretBox(parseSecretKeys(k2)).open(id, underK2), secret);
  // Opening without asking to re-encrypt changes nothing, whatever the keys.
  const { store, secrets } = await openStore(databaseUrl, { webhookSecretKeys: parseSecretKeys(`${k1},${k2}`) });
  await store.close();
  assert.equal(secrets.resealed, 0);
  assert.equal(await storedSecret(databaseUrl, id), underK2);

  // Without the key that encrypts it, or without any key, the store refuses to open, changing nothing.
  await assert.rejects(restart(databaseUrl, k1), (err: Error) => err instanceof SecretKeyError && /WEBHOOK_SECRET_KEYS does not hold/.test(err.message));
  await assert.rejects(restart(databaseUrl, ''), SecretKeyError);
  assert.equal(await storedSecret(databaseUrl, id), underK2);
});

test('a sealed secret opens only for its own subscription and only unaltered', () => {
  const box = createSecretBox(parseSecretKeys(newKey()));
  const sealed = box.seal('wh_a', 'whsec_' + randomBytes(32).toString('base64'));
  assert.throws(() => box.open('wh_b', sealed), SecretKeyError);
  const flipped = sealed.slice(0, -2) + (sealed.at(-2) === 'A' ? 'B' : 'A') + sealed.at(-1);
  assert.throws(() => box.open('wh_a', flipped), SecretKeyError);
  // Two seals of one secret differ (a fresh IV each time).
  assert.notEqual(box.seal('wh_a', 'whsec_x'), box.seal('wh_a', 'whsec_x'));
});

test('the server refuses to start with a malformed key, or without the key a stored secret needs, and says why', async (t) => {
  const databaseUrl = await freshDatabaseUrl(t);
  const base = { DATABASE_URL: databaseUrl, PORT: '0', BOOTSTRAP_TOKEN: 'false' };
  const short = randomBytes(16).toString('base64');
  for (const bad of ['not base64!', short, `${newKey()},${short}`]) {
    const run = await runCli(['serve'], { ...base, WEBHOOK_SECRET_KEYS: bad });
    assert.notEqual(run.code, 0, bad);
    assert.match(run.stderr, /WEBHOOK_SECRET_KEYS: (key \d of \d|the key) (is not base64|holds 16 bytes)/, run.stderr);
    assert.ok(!run.stderr.includes(short), 'the key is not echoed');
  }
  const key = newKey();
  await subscribeInStore(databaseUrl, key);
  const run = await runCli(['serve'], { ...base, WEBHOOK_SECRET_KEYS: '' });
  assert.notEqual(run.code, 0);
  assert.match(run.stderr, /encrypted with key [A-Za-z0-9_-]{8}, which WEBHOOK_SECRET_KEYS does not hold/, run.stderr);
  assert.ok(!run.stderr.includes(key));
});
