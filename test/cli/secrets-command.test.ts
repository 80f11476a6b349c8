// `plant-store secrets status|rotate`: status counts the signing secrets per key and changes nothing; rotate
// re-encrypts under the first key and says how many; a secret whose key is not listed makes both exit 1,
// and rotate then changes nothing. No key is ever printed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { migratedDatabaseUrl, runCli } from '../helpers/app.js';
import { createStore, openStore } from '../../src/storage/open-store.js';
import { parseSecretKeys } from '../../src/webhooks/secret-box.js';
import { createWebhookService } from '../../src/webhooks/webhook-service.js';

const newKey = () => randomBytes(32).toString('base64');
const keyId = (key: string) => parseSecretKeys(key)[0]!.id;

async function storedSecrets(databaseUrl: string): Promise<string[]> {
  const raw = createStore(databaseUrl);
  try {
    return (await raw.webhooks.listSubscriptions()).map((s) => s.secret).sort();
  } finally {
    await raw.close();
  }
}

test('secrets status counts per key; secrets rotate re-encrypts under the first key and reports the count; a missing key is exit 1', async (t) => {
  const databaseUrl = await migratedDatabaseUrl(t);
  const [k1, k2] = [newKey(), newKey()];
  const { store } = await openStore(databaseUrl, { webhookSecretKeys: parseSecretKeys(k1) });
  const ids: string[] = [];
  try {
    const service = createWebhookService(store.webhooks, { allowedHosts: ['127.0.0.1'] });
    for (const port of [9, 10]) ids.push((await service.create({ url: `http://127.0.0.1:${port}/hook` })).subscription.id);
  } finally {
    await store.close();
  }
  const run = (args: string[], keys: string) => runCli(['secrets', ...args], { DATABASE_URL: databaseUrl, WEBHOOK_SECRET_KEYS: keys });
  const noKeys = (r: { stdout: string; stderr: string }) => {
    for (const key of [k1, k2]) assert.ok(!(r.stdout + r.stderr).includes(key), 'a key was printed');
  };

  const before = await run(['status'], `${k2},${k1}`);
  assert.equal(before.code, 0, before.stderr);
  assert.equal(
    before.stdout,
    `Webhook signing secrets: 2.\n  key 1 of 2, ${keyId(k2)} (encrypts): 0\n  key 2 of 2, ${keyId(k1)} (decrypts only): 2\n  in clear: 0\n`,
  );
  noKeys(before);

  const rotated = await run(['rotate'], `${k2},${k1}`);
  assert.equal(rotated.code, 0, rotated.stderr);
  assert.match(rotated.stdout, new RegExp(`^Encrypted 2 webhook signing secrets again under key ${keyId(k2)} \\(the first of WEBHOOK_SECRET_KEYS\\)\\.$`, 'm'));
  assert.match(rotated.stdout, new RegExp(`^  key 1 of 2, ${keyId(k2)} \\(encrypts\\): 2$`, 'm'));
  assert.match(rotated.stdout, new RegExp(`^  key 2 of 2, ${keyId(k1)} \\(decrypts only\\): 0$`, 'm'));
  noKeys(rotated);
  const underK2 = await storedSecrets(databaseUrl);
  assert.ok(underK2.every((s) => s.startsWith(`enc:v1:${keyId(k2)}:`)));

  const [again, stale, refused, none] = await Promise.all([
    run(['rotate'], k2),
    run(['status'], k1),
    run(['rotate'], k1),
    run(['rotate'], ''),
  ]);
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stdout, /^Encrypted 0 webhook signing secrets again/m);
  // With only the old key: status names the subscriptions whose key is missing, rotate refuses.
  assert.equal(stale.code, 1);
  const line = new RegExp(`^  key ${keyId(k2)}, NOT in WEBHOOK_SECRET_KEYS: 2 \\((wh_\\S+), (wh_\\S+)\\);`, 'm').exec(stale.stdout);
  assert.ok(line, stale.stdout);
  assert.deepEqual([line[1], line[2]].sort(), [...ids].sort());
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, new RegExp(`encrypted with key ${keyId(k2)}, which WEBHOOK_SECRET_KEYS does not hold`));
  assert.equal(none.code, 1);
  assert.match(none.stderr, /WEBHOOK_SECRET_KEYS is not set/);
  for (const r of [again, stale, refused, none]) noKeys(r);
  assert.deepEqual(await storedSecrets(databaseUrl), underK2, 'a refused rotation changed a secret');

  const usage = await runCli(['secrets', 'bogus'], { DATABASE_URL: databaseUrl });
  assert.equal(usage.code, 2);
  assert.match(usage.stderr, /Unknown command "secrets bogus"/);
});
