// With two worker processes, every kind of write works under concurrent load and none is refused: subscriptions
// made and deleted, plants written, deliveries sent and retried, token use recorded (on SQLite all of them go
// to the primary's one writer, so no worker waits on the file's lock: no SQLITE_BUSY, no 503).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runCli, spawnServer } from '../helpers/app.js';
import { fresh } from '../helpers/raw-request.js';
import { eventually } from '../helpers/sleep.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { databaseWithToken, portOf } from '../helpers/cli.js';

test('two workers: subscriptions, plant writes, deliveries, a retry, a delete and token use all work under concurrent writes, none refused', async (t) => {
  const { databaseUrl } = await databaseWithToken(t);
  const made = await runCli(['token', 'create', '--scopes', 'plants:read,plants:write,webhooks:manage', '--name', 'writer'], { DATABASE_URL: databaseUrl });
  assert.equal(made.code, 0, made.stderr);
  const [, tokenId] = /Created token (\S+)/.exec(made.stdout)!;
  const token = made.stdout.trim().split('\n').at(-1)!;
  const server = await spawnServer(t, { DATABASE_URL: databaseUrl, BOOTSTRAP_TOKEN: 'false', WORKERS: '2', WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' });
  await eventually(() => server.stdout().includes('plant-store is listening'), 'every worker listening', 20_000);
  const port = portOf(server.url);
  const post = (id: number) => fresh(port, '/plants', token, { method: 'POST', body: `{"id":${id},"name":"p${id}"}` });
  const remove = (id: number) => fresh(port, `/plants/${id}`, token, { method: 'DELETE' });
  const patch = (id: number) => fresh(port, `/plants/${id}`, token, { method: 'PATCH', body: `{"tag":"t${id}"}`, contentType: 'application/merge-patch+json' });

  // Three receivers; the third answers 503 with an hour's Retry-After, so its deliveries wait for a retry.
  const secrets: string[] = [];
  const receivers: Receiver[] = [];
  const busy = { status: 503, headers: { 'retry-after': '3600' } };
  for (let i = 0; i < 3; i++) receivers.push(await startReceiver(t, () => secrets[i]!, () => (i === 2 ? busy : { status: 204 })));
  const statuses: number[] = [];
  const answer = async (r: Promise<{ status: number; body: string }>) => {
    const got = await r;
    statuses.push(got.status);
    return got;
  };

  // Subscriptions made while plants are written and patched through both workers (to deletes only, so that
  // nothing reaches a receiver before the test knows its secret).
  const [subs] = await Promise.all([
    Promise.all(receivers.map((r) => answer(fresh(port, '/webhooks', token, { method: 'POST', body: JSON.stringify({ url: r.url, events: ['plantDeleted'] }) })))),
    Promise.all(Array.from({ length: 60 }, (_, i) => answer(post(i + 1)))),
  ]);
  const ids = subs.map((s) => {
    const body = JSON.parse(s.body) as { id: string; secret: string };
    secrets.push(body.secret);
    return body.id;
  });
  await Promise.all(Array.from({ length: 20 }, (_, i) => answer(patch(i + 1))));
  assert.deepEqual(statuses.filter((s) => s !== 200 && s !== 201), [], 'a write was refused');
  assert.equal(statuses.length, 83);

  // Each delete reaches all three.
  await Promise.all(Array.from({ length: 20 }, (_, i) => answer(remove(i + 1))));
  const deletedIds = (r: Receiver) => new Set([...r.byId.values()].map((d) => (JSON.parse(d.body) as { id: number }).id));
  for (const r of receivers) await r.until(() => deletedIds(r).size === 20, 20_000);

  // A failed delivery retried at once, while a subscription is deleted and plants are written.
  // Its 503 reached the receiver; once the attempt is recorded the dispatcher holds it no longer (a retry
  // while it does is a 409, "being sent at this moment").
  type Listed = { id: string; attempts: unknown[] };
  const first = await eventually(async () => {
    const deliveries = JSON.parse((await fresh(port, `/webhooks/${ids[2]}/deliveries?limit=1`, token)).body) as { items?: Listed[] } | Listed[];
    const [listed] = Array.isArray(deliveries) ? deliveries : deliveries.items!;
    return listed && listed.attempts.length > 0 ? listed : undefined;
  }, 'the first delivery with its attempt recorded');
  const before = receivers[2]!.requests.length;
  const [retried, deleted] = await Promise.all([
    answer(fresh(port, `/webhooks/${ids[2]}/deliveries/${first!.id}/retry`, token, { method: 'POST' })),
    answer(fresh(port, `/webhooks/${ids[0]}`, token, { method: 'DELETE' })),
    ...Array.from({ length: 20 }, (_, i) => answer(remove(21 + i))),
  ]);
  assert.equal(retried.status, 202, retried.body);
  assert.equal(deleted.status, 204, deleted.body);
  await receivers[2]!.until((r) => r.requests.length > before, 20_000);
  assert.equal((await fresh(port, `/webhooks/${ids[0]}`, token)).status, 404);
  for (const r of receivers) assert.deepEqual(r.problems, []);
  assert.deepEqual(statuses.filter((s) => s >= 300), [], 'a write was refused');

  // Token use is recorded by the workers as they stop (through the primary, which stops last).
  server.proc.kill('SIGTERM');
  assert.equal(await server.exited, 0);
  const listed = await runCli(['token', 'list', '--json'], { DATABASE_URL: databaseUrl });
  const mine = (JSON.parse(listed.stdout) as { id: string; lastUsed: string | null }[]).find((x) => x.id === tokenId);
  assert.notEqual(mine?.lastUsed ?? null, null, 'the token\'s use was not recorded');
  const logs = server.stdout() + server.stderr();
  assert.doesNotMatch(logs, /SQLITE_BUSY|database is locked|could not record token use/);
});
