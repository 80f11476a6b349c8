// The rolling rotation of WEBHOOK_SECRET_KEYS that docs/operations.md gives, run on two `plant-store serve`
// instances sharing one PostgreSQL database while plants are written and delivered throughout: the new key
// added as decrypt-only everywhere, then put first one instance at a time, `secrets status` showing nothing
// left under the old key, the old key dropped. No delivery may fail or go missing on the way.
// PostgreSQL only (scripts/engine-only.mjs): one SQLite file has one server.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { freshDatabaseUrl, type ChildServer } from '../helpers/app.js';
import { runIn, serveIn } from '../helpers/cli.js';
import { clientFor } from '../helpers/client.js';
import { keyId, newKey } from '../helpers/secrets.js';
import { subscribedReceiver } from '../helpers/webhooks.js';
import { eventually } from '../helpers/sleep.js';


interface Delivery {
  status: string;
  attempts: { statusCode?: number; error?: string }[];
}

test('rolling key rotation over two instances on one PostgreSQL database: deliveries flow throughout and none fails', async (t: TestContext) => {
  const databaseUrl = await freshDatabaseUrl(t);
  const [k1, k2] = [newKey(), newKey()];
  const base = { DATABASE_URL: databaseUrl, HOST: '127.0.0.1', BOOTSTRAP_TOKEN: 'false', WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', WORKERS: '1' };
  const cli = async (args: string[], keys: string): Promise<string> => {
    const r = await runIn(tmpdir(), args, { ...base, WEBHOOK_SECRET_KEYS: keys });
    assert.equal(r.code, 0, `plant-store ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  await cli(['migrate'], k1);
  const token = (await cli(['token', 'create', '--scopes', 'plants:read,plants:write,webhooks:manage', '--name', 'rotation'], k1)).trim().split('\n').at(-1)!;
  const call = (server: ChildServer, method: string, path: string, body?: unknown) =>
    fetch(`${server.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });

  const instances = new Map<string, ChildServer>();
  const logs: string[] = [];
  const start = async (name: string, keys: string) => instances.set(name, await serveIn(t, tmpdir(), { ...base, WEBHOOK_SECRET_KEYS: keys }));
  await Promise.all([start('a', k1), start('b', k1)]);

  const first = await subscribedReceiver(t, clientFor(instances.get('a')!, token), { events: ['newPlant'] });

  // One plant at a time, on the instances that are up in turn, each written once the previous one was delivered.
  let writing = true;
  let written = 0;
  let posting: Promise<unknown> = Promise.resolve();
  const writer = (async () => {
    while (writing) {
      const up = [...instances.values()];
      const id = written + 1;
      const post = call(up[id % up.length]!, 'POST', '/plants', { id, name: `plant-${id}` });
      posting = post.catch(() => {});
      const res = await post;
      assert.equal(res.status, 200, await res.clone().text());
      written = id;
      await first.rx.until((r) => r.byId.size >= id, 15_000);
    }
  })();
  writer.catch(() => {});
  /** Waits until a few more plants were delivered, so that every step is seen delivering. */
  const flowing = async () => {
    const mark = first.rx.byId.size;
    await Promise.race([first.rx.until((r) => r.byId.size >= mark + 3, 15_000), writer.then(() => assert.fail('the writer stopped'))]);
  };
  /** Stops an instance gracefully (no request of the writer in flight to it) and starts it again with `keys`. */
  const restart = async (name: string, keys: string) => {
    const old = instances.get(name)!;
    instances.delete(name);
    await posting;
    old.proc.kill('SIGTERM');
    assert.equal(await old.exited, 0, old.stderr());
    logs.push(old.stdout() + old.stderr());
    await start(name, keys);
    await flowing();
  };

  await flowing();
  // 1. The new key, decrypt-only, everywhere.
  await restart('a', `${k1},${k2}`);
  await restart('b', `${k1},${k2}`);
  // 2. The new key first, one instance at a time: a re-encrypts at start, b (still K1 first) opens what a sealed.
  await restart('a', `${k2},${k1}`);
  assert.match(instances.get('a')!.stdout(), /"count":1,.*"msg":"webhook signing secrets encrypted under the first WEBHOOK_SECRET_KEYS key"/);
  // b, not yet restarted, still seals what it creates under K1; its own restart moves that too.
  const second = await subscribedReceiver(t, clientFor(instances.get('b')!, token), { events: ['newPlant'] });
  await restart('b', `${k2},${k1}`);
  // 3. Nothing left under K1: secrets status says so, and secrets rotate has nothing to do.
  const status = await cli(['secrets', 'status'], `${k2},${k1}`);
  assert.match(status, new RegExp(`^  key 1 of 2, ${keyId(k2)} \\(encrypts\\): 2$`, 'm'), status);
  assert.match(status, new RegExp(`^  key 2 of 2, ${keyId(k1)} \\(decrypts only\\): 0$`, 'm'), status);
  assert.match(await cli(['secrets', 'rotate'], `${k2},${k1}`), /^Encrypted 0 webhook signing secrets again/m);
  // 4. The old key goes.
  await restart('a', k2);
  await restart('b', k2);

  writing = false;
  await writer;
  t.diagnostic(`${written} plants written and delivered across 6 restarts`);
  assert.equal(first.rx.byId.size, written);
  for (const sub of [first, second]) {
    // The second subscription's last deliveries may still be on their way.
    let deliveries: Delivery[] = [];
    const settled = async () => {
      const res = await call(instances.get('a')!, 'GET', `/webhooks/${sub.id}/deliveries?limit=1000`);
      assert.equal(res.status, 200);
      deliveries = (await res.json()) as Delivery[];
      return deliveries.every((d) => d.status !== 'pending');
    };
    await eventually(settled, 'no delivery pending', 15_000, 50).catch(() => {});
    assert.ok(deliveries.length > 0);
    const failed = deliveries.filter((d) => d.status !== 'succeeded' || d.attempts.some((a) => a.statusCode !== 200));
    assert.deepEqual(failed, [], 'a delivery failed or was retried during the rotation');
    assert.equal(sub.rx.byId.size, deliveries.length, 'every delivery reached the receiver');
    assert.deepEqual(sub.rx.problems, [], 'every delivery verifies with the secret the subscriber was given');
  }
  for (const s of instances.values()) logs.push(s.stdout() + s.stderr());
  for (const log of logs) assert.doesNotMatch(log, /could not claim deliveries|not sent: |"level":50/);
});
