// docs/backup.md's PostgreSQL recipe, as written: pg_dump --format=custom under concurrent writes to a real
// server, pg_restore --single-transaction into a new database, plant-store migrate --after-restore (its
// version counter moves past the clock in microseconds), and the restored store serves every plant
// acknowledged before the dump began, with its token, subscription and pending deliveries. pg_restore into a
// database that already holds the tables fails, as the docs say.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import pg from 'pg';
import { freshDatabaseUrl, runCli, spawnServer, tempDir } from '../helpers/app.js';
import { findPgBinDir } from '../helpers/pg-cluster.js';
import { postJson } from '../helpers/requests.js';
import { eventually } from '../helpers/sleep.js';

function tool(name: string, args: string[]): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile(join(findPgBinDir(), name), args, (err, _stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stderr }));
  });
}

async function query(url: string, sql: string): Promise<unknown[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query({ text: sql, rowMode: 'array' })).rows.map((r: unknown[]) => r[0]);
  } finally {
    await client.end();
  }
}

test('pg_dump under concurrent writes and pg_restore into a new database keep every acknowledged plant, tokens, subscriptions and pending deliveries', async (t) => {
  const env = { DATABASE_URL: await freshDatabaseUrl(t), BOOTSTRAP_TOKEN: 'false', WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' };
  const server = await spawnServer(t, env);
  const created = await runCli(['token', 'create', '--name', 'ops', '--scopes', 'plants:read,plants:write,webhooks:manage'], env);
  assert.equal(created.code, 0, created.stderr);
  const secret = created.stdout.trim().split('\n').at(-1)!;
  const sub = await postJson(server.url, secret, '/webhooks', { url: 'http://127.0.0.1:1/hooks' });
  assert.equal(sub.status, 201);
  const subscriptionId = ((await sub.json()) as { id: string }).id;

  const acknowledged = new Set<number>();
  let writing = true;
  let next = 1;
  const writers = Array.from({ length: 4 }, async () => {
    while (writing) {
      const id = next++;
      const res = await postJson(server.url, secret, '/plants', { id, name: `p${id}` });
      assert.equal(res.status, 200, await res.text());
      acknowledged.add(id);
    }
  });
  await eventually(() => acknowledged.size >= 200, () => `200 writes acknowledged (${acknowledged.size})`, 60_000, 5);
  const before = new Set(acknowledged);
  const dump = join(tempDir(t), 'plant-store.dump');
  const dumped = await tool('pg_dump', ['--format=custom', `--file=${dump}`, `--dbname=${env.DATABASE_URL}`]);
  writing = false;
  await Promise.all(writers);
  assert.equal(dumped.code, 0, dumped.stderr);
  assert.equal((await tool('pg_restore', ['--list', dump])).code, 0);

  const restoredUrl = await freshDatabaseUrl(t);
  const restored = await tool('pg_restore', ['--exit-on-error', '--single-transaction', '--no-owner', `--dbname=${restoredUrl}`, dump]);
  assert.equal(restored.code, 0, restored.stderr);
  const ids = new Set((await query(restoredUrl, 'SELECT id FROM plants')).map(Number));
  for (const id of before) assert.ok(ids.has(id), `plant ${id}, acknowledged before pg_dump began, is missing`);
  const [pending] = await query(restoredUrl, "SELECT count(*) FROM webhook_deliveries WHERE status = 'pending'");
  assert.ok(Number(pending) > 0, 'no pending delivery was restored');

  const again = await tool('pg_restore', ['--exit-on-error', '--single-transaction', '--no-owner', `--dbname=${restoredUrl}`, dump]);
  assert.notEqual(again.code, 0, 'pg_restore over a restored database should fail');

  // The recipe's last step before serving it (test/cli/restore-versions.test.ts shows what it is for).
  const marked = await runCli(['migrate', '--after-restore'], { ...env, DATABASE_URL: restoredUrl });
  assert.equal(marked.code, 0, marked.stderr);
  const [counter] = await query(restoredUrl, 'SELECT last_value FROM plant_versions');
  assert.ok(BigInt(counter as string) >= BigInt(Date.now() - 60_000) * 1000n, `the version counter is at ${counter}`);

  const served = await spawnServer(t, { ...env, DATABASE_URL: restoredUrl });
  const auth = { authorization: `Bearer ${secret}` };
  const first = await fetch(`${served.url}/plants/1`, { headers: auth });
  assert.equal(first.status, 200);
  const subs = (await (await fetch(`${served.url}/webhooks`, { headers: auth })).json()) as { id: string }[];
  assert.deepEqual(subs.map((x) => x.id), [subscriptionId]);
  assert.equal((await postJson(served.url, secret, '/plants', { id: 999_999, name: 'after the restore' })).status, 200);
});
