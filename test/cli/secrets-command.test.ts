// `plant-store secrets status|rotate`: status counts the signing secrets per key and changes nothing; rotate
// re-encrypts under the first key and says how many; a secret whose key is not listed makes both exit 1,
// and rotate then changes nothing. No key is ever printed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { migratedDatabaseUrl, runCli, spawnServer } from '../helpers/app.js';
import { createStore, openStore, runningServers } from '../../src/storage/open-store.js';
import { keyId, newKey } from '../helpers/secrets.js';
import { eventually } from '../helpers/sleep.js';
import { parseSecretKeys } from '../../src/webhooks/secret-box.js';
import { createWebhookService } from '../../src/webhooks/webhook-service.js';


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

test('secrets rotate beside a running server without the new key refuses, naming the server and the rolling order, unless --force; once the server holds the key it rotates', async (t) => {
  const databaseUrl = await migratedDatabaseUrl(t);
  const [k1, k2] = [newKey(), newKey()];
  const { store } = await openStore(databaseUrl, { webhookSecretKeys: parseSecretKeys(k1) });
  try {
    await createWebhookService(store.webhooks, { allowedHosts: ['127.0.0.1'] }).create({ url: 'http://127.0.0.1:9/hook' });
  } finally {
    await store.close();
  }
  const rotate = (...args: string[]) => runCli(['secrets', 'rotate', ...args], { DATABASE_URL: databaseUrl, WEBHOOK_SECRET_KEYS: `${k2},${k1}` });
  const env = { DATABASE_URL: databaseUrl, BOOTSTRAP_TOKEN: 'false' };
  // A server is seen once it has the file open (SQLite: before it listens) or its LISTEN connection (PostgreSQL).
  const seen = (n: number) => eventually(async () => (await runningServers(databaseUrl)).length === n, `${n} running servers seen`);
  const old = await spawnServer(t, { ...env, WEBHOOK_SECRET_KEYS: k1 });
  await seen(1);

  const refused = await rotate();
  assert.equal(refused.code, 1, refused.stdout);
  assert.match(refused.stderr, new RegExp(`in use by a server without key ${keyId(k2)}, the first of WEBHOOK_SECRET_KEYS: .*\\(keys ${keyId(k1)}\\)`));
  assert.match(refused.stderr, /Rotate in this order: add the new key last on every server \(WEBHOOK_SECRET_KEYS=OLD,NEW\)/);
  assert.match(refused.stderr, /--force rotates all the same/);
  assert.ok((await storedSecrets(databaseUrl)).every((s) => s.startsWith(`enc:v1:${keyId(k1)}:`)), 'a refused rotation changed a secret');
  assert.equal((await runCli(['secrets', 'status', '--force'], { DATABASE_URL: databaseUrl, WEBHOOK_SECRET_KEYS: k1 })).code, 2);

  // The rolling order's first step: the server restarted with the new key last.
  old.proc.kill('SIGTERM');
  await old.exited;
  await seen(0);
  const rolled = await spawnServer(t, { ...env, WEBHOOK_SECRET_KEYS: `${k1},${k2}` });
  await seen(1);
  const rotated = await rotate();
  assert.equal(rotated.code, 0, rotated.stderr);
  assert.match(rotated.stdout, /^Encrypted 1 webhook signing secret again under key/m);
  assert.ok((await storedSecrets(databaseUrl)).every((s) => s.startsWith(`enc:v1:${keyId(k2)}:`)));
  rolled.proc.kill('SIGTERM');
  await rolled.exited;
  await seen(0);

  // --force: a server without the key, rotated past on purpose.
  await spawnServer(t, { ...env, WEBHOOK_SECRET_KEYS: k2 });
  await seen(1);
  const forced = await runCli(['secrets', 'rotate', '--force'], { DATABASE_URL: databaseUrl, WEBHOOK_SECRET_KEYS: `${k1},${k2}` });
  assert.equal(forced.code, 0, forced.stderr);
  assert.ok((await storedSecrets(databaseUrl)).every((s) => s.startsWith(`enc:v1:${keyId(k1)}:`)));
});
