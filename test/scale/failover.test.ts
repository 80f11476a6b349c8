// PostgreSQL failover as docs/deployment.md (PostgreSQL) describes it: a primary with a synchronous streaming
// standby, reached through HAProxy in TCP mode. Under load the primary is killed (kill -9 of every server
// process), the standby promoted and HAProxy switched to it: no 500, every acknowledged write is on the new
// primary, the same service process serves again within seconds, versions keep growing, and the feed and the
// webhooks carry each acknowledged change's event (the feed exactly once). And a connection that lands on a
// read-only server is closed rather than pooled again. PostgreSQL only (scripts/engine-only.mjs).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { ERRORS } from '../../src/errors/catalogue.js';
import { pgCluster, pgStandby } from '../helpers/pg-cluster.js';
import { startReceiver } from '../helpers/receiver.js';
import { eventually } from '../helpers/sleep.js';
import { cli, createTokenCli, instanceEnv, startInstance, waitForDeliveries } from './deployment.js';
import { clientFor } from '../helpers/client.js';
import { subscribe } from '../helpers/webhooks.js';
import { haproxyAvailable, startPgHaproxy, switchPgServer, type Haproxy } from './haproxy.js';
import { describeLoad, emptyLoad, writeLoad, type Answer } from './load.js';

const CLIENTS = 8;
/** A request taking longer than this counts as a hang (connect and statement timeouts are 2 s and 3 s here). */
const DEADLINE_MS = 10_000;
/** The service writes again within this of HAProxy pointing at the promoted standby. */
const RECOVERY_MS = 8_000;
const TIMEOUTS = { DATABASE_CONNECT_TIMEOUT_MS: '2000', DATABASE_STATEMENT_TIMEOUT_MS: '3000' };
const UNAVAILABLE: string[] = [ERRORS.STORE_UNAVAILABLE.message, ERRORS.STORE_COMMIT_UNKNOWN.message];

interface FeedEvent {
  id: string;
  type: string;
  data: { id: number; version: number };
}

/** One SQL statement on a server directly (not through HAProxy). */
async function sql<R extends pg.QueryResultRow>(url: string, text: string): Promise<R[]> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    return (await client.query<R>(text)).rows;
  } finally {
    await client.end();
  }
}

/** Why a non-200 answer is not the 503 the service owes while its database is away, or undefined when it is. */
function notA503(a: { status: number; retryAfter?: string | null; body: string }): string | undefined {
  if (a.status !== 503 || a.retryAfter !== '1') return `${a.status} (Retry-After ${a.retryAfter}): ${a.body}`;
  const body = JSON.parse(a.body) as Record<string, unknown>;
  if (body.error !== 503 || !UNAVAILABLE.includes(body.message as string) || Object.keys(body).length !== 2) return a.body;
  return undefined;
}

/**
 * A reader following GET /events from the start with short long polls, keeping every event and every refusal;
 * refused, it asks again 100 ms later until the feed answers.
 */
function followFeed(baseUrl: string, token: string, done: () => boolean) {
  const seen: FeedEvent[] = [];
  const refused: { status: number; retryAfter: string | null; body: string }[] = [];
  const page = async (after: string | undefined): Promise<FeedEvent[] | 'done' | undefined> => {
    if (done()) return 'done';
    let res: Response;
    try {
      res = await fetch(`${baseUrl}/events?limit=1000&wait=1${after ? `&after=${after}` : ''}`, {
        headers: { authorization: `Bearer ${token}` },
        signal: AbortSignal.timeout(DEADLINE_MS),
      });
    } catch (e) {
      refused.push({ status: 0, retryAfter: null, body: String(e) });
      return undefined;
    }
    const body = await res.text();
    if (res.status === 200) return JSON.parse(body) as FeedEvent[];
    refused.push({ status: res.status, retryAfter: res.headers.get('retry-after'), body });
    return undefined;
  };
  const running = (async () => {
    let after: string | undefined;
    for (;;) {
      const events = await eventually(() => page(after), () => `the feed answering again (${refused.length} refusals)`, 60_000, 100);
      if (events === 'done') return;
      seen.push(...events);
      after = events.at(-1)?.id ?? after;
    }
  })();
  return { seen, refused, running };
}

/** The whole feed as a new reader finds it now, page after page. */
async function readWholeFeed(baseUrl: string, token: string): Promise<FeedEvent[]> {
  const all: FeedEvent[] = [];
  for (;;) {
    const res = await fetch(`${baseUrl}/events?limit=1000${all.length ? `&after=${all.at(-1)!.id}` : ''}`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(res.status, 200);
    const page = (await res.json()) as FeedEvent[];
    if (page.length === 0) return all;
    all.push(...page);
  }
}

test('PostgreSQL failover under load: kill -9 of the primary, the synchronous standby promoted, HAProxy switched: no 500, no acknowledged write or event lost, serving again without a restart', { timeout: 120_000 }, async (t) => {
  assert.ok(haproxyAvailable(), 'haproxy is not installed (apt-get install -y haproxy)');
  const primary = await pgCluster(t);
  const standby = await pgStandby(t, primary, { name: 'standby1', synchronous: true });
  const lb = await startPgHaproxy(t, [
    { name: 'db1', port: primary.port },
    { name: 'db2', port: standby.port, disabled: true },
  ]);
  await eventually(async () => (await lb.states()).get('db1') === 'UP', 'HAProxy sees db1 up', 10_000, 50);
  // The service knows only the name that moves (the standby has the same password: it is a copy).
  const env = { ...instanceEnv(`postgres://postgres:${primary.password}@127.0.0.1:${lb.port}/postgres`), WORKERS: '2', ...TIMEOUTS };
  await cli(env, ['migrate']);
  const { secret: token } = await createTokenCli(env, 'plants:read,plants:write,webhooks:manage', 'failover');
  const server = await startInstance(t, env, 's1');
  let secret = '';
  const receiver = await startReceiver(t as TestContext, () => secret);
  secret = (await subscribe(clientFor(server.url, token), `${receiver.url}/failover`)).secret;

  let stop = false;
  let stopFeed = false;
  // A failed assertion must not leave the writers or the reader running (the file would never exit).
  t.after(() => {
    stop = true;
    stopFeed = true;
  });
  const feed = followFeed(server.url, token, () => stopFeed);
  const live = emptyLoad();
  const t0 = Date.now();
  const since = () => Date.now() - t0;
  const load = writeLoad({ port: server.port, token, clients: CLIENTS, firstId: 1_000_000n, until: () => stop, timeoutMs: DEADLINE_MS, result: live, pauseMs: 50 });
  await eventually(() => live.ok.size >= 300, () => `writes acknowledged before the failover: ${describeLoad(live)}`, 20_000, 50);

  const killAt = since();
  await primary.crash();
  // The primary stays lost until writes have met the dead server, then the failover starts.
  const metTheLoss = () => [...live.others, ...live.failed].some((o) => o.at >= killAt);
  await eventually(metTheLoss, () => `a write refused after the kill: ${describeLoad(live)}`, RECOVERY_MS, 20);
  // The failover as an operator runs it: promote the synchronous standby, then move the name to it.
  const promotingAt = since();
  await standby.promote();
  await switchPgServer(lb, 'db1', 'db2');
  const switchedAt = since();

  const okAfterSwitch = () => [...live.ok.values()].filter((at) => at > switchedAt);
  await eventually(() => okAfterSwitch().length > 0, () => `a write acknowledged after the switch: ${describeLoad(live)}`, RECOVERY_MS, 20);
  const firstWriteMs = Math.min(...okAfterSwitch()) - switchedAt;
  // Each worker's LISTEN connection is back, on the new primary: instances hear each other's events again.
  let listening = 0;
  await eventually(
    async () => (listening = Number((await sql<{ n: string }>(standby.url, "SELECT count(*) AS n FROM pg_stat_activity WHERE application_name LIKE 'plant-store events%' AND query LIKE 'LISTEN%'"))[0]!.n)) === 2,
    () => `both workers LISTEN on the new primary (${listening} do)`,
    RECOVERY_MS,
    100,
  );
  const listeningMs = since() - switchedAt;
  const listeningAt = since();
  // Writes on the new primary with every worker listening there.
  await eventually(() => [...live.ok.values()].filter((at) => at > listeningAt).length >= 50, () => `writes acknowledged after both LISTENs: ${describeLoad(live)}`, RECOVERY_MS, 20);
  stop = true;
  const result = await load;
  t.diagnostic(describeLoad(result));
  t.diagnostic(`promote and switch took ${switchedAt - promotingAt} ms; first write ${firstWriteMs} ms and both LISTENs ${listeningMs} ms after the switch`);

  // Every answer was a 200 or the 503 of a store away, with Retry-After; nothing hung, no connection was dropped.
  assert.equal(server.proc.exitCode, null, 'the service kept running through the failover');
  assert.equal(server.stdout().match(/"worker started"/g)?.length, 2, 'no worker was replaced');
  assert.deepEqual(result.failed.slice(0, 5), [], `requests without an answer: ${describeLoad(result)}`);
  assert.ok(result.maxMs < DEADLINE_MS, `slowest request ${result.maxMs} ms`);
  const wrong = result.others.flatMap((o) => notA503(o) ?? []);
  assert.deepEqual(wrong.slice(0, 5), [], `answers other than 200 or a 503 Error with Retry-After: ${describeLoad(result)}`);
  assert.ok(result.others.length > 0, `the failover was not noticed: ${describeLoad(result)}`);
  const outside = result.others.filter((o: Answer) => o.at < killAt || o.at > switchedAt + firstWriteMs + 2_000);
  assert.deepEqual(outside.slice(0, 5), [], '503 outside the failover');
  const unknown = result.others.filter((o) => o.body.includes(ERRORS.STORE_COMMIT_UNKNOWN.message)).length;
  t.diagnostic(`503: ${result.others.length - unknown} nothing saved, ${unknown} may or may not have been saved`);

  // Every acknowledged write is on the new primary, read there directly.
  const stored = new Map((await sql<{ id: string; version: string }>(standby.url, 'SELECT id::text AS id, version::text AS version FROM plants')).map((r) => [BigInt(r.id), BigInt(r.version)]));
  const acknowledged = [...result.ok.keys()];
  const lost = acknowledged.filter((id) => !stored.has(id));
  assert.deepEqual(lost.slice(0, 10), [], `${lost.length} of ${acknowledged.length} acknowledged plants missing on the new primary`);
  // And through the service, which reads them from there too.
  for (const id of [acknowledged[0]!, acknowledged.at(-1)!]) {
    const res = await fetch(`${server.url}/plants/${id}`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(res.status, 200, `GET /plants/${id}`);
  }
  // Versions keep growing: every version given after the switch is above every one given before the kill.
  const versionsOf = (from: number, to: number) => [...result.ok].filter(([, at]) => at >= from && at <= to).map(([id]) => stored.get(id)!);
  const before = versionsOf(0, killAt);
  const after = versionsOf(switchedAt, Infinity);
  assert.ok(before.length > 0 && after.length > 0);
  const maxBefore = before.reduce((a, b) => (a > b ? a : b));
  const minAfter = after.reduce((a, b) => (a < b ? a : b));
  assert.ok(minAfter > maxBefore, `a version after the failover (${minAfter}) is not above those before it (${maxBefore})`);

  // The feed: the reader that followed it through the failover has every acknowledged change's event once,
  // and read the very sequence a new reader reads now (nothing skipped, repeated or renumbered).
  const idsOf = (events: FeedEvent[]) => events.map((e) => BigInt(e.data.id));
  await eventually(() => new Set(idsOf(feed.seen)).size >= stored.size, () => `the reader caught up (${feed.seen.length} of ${stored.size} events)`, 20_000, 100);
  stopFeed = true;
  await feed.running;
  const whole = await readWholeFeed(server.url, token);
  assert.deepEqual(feed.seen.map((e) => e.id), whole.map((e) => e.id), 'the live reader and a new one read the same feed');
  assert.equal(new Set(whole.map((e) => e.id)).size, whole.length, 'an event id twice in the feed');
  assert.ok(whole.every((e) => e.type === 'newPlant'));
  const feedIds = idsOf(whole);
  assert.equal(new Set(feedIds).size, feedIds.length, 'a plant created twice in the feed');
  assert.deepEqual(acknowledged.filter((id) => !feedIds.includes(id)).slice(0, 10), [], 'acknowledged changes missing from the feed');
  // Nothing else either: one event per stored plant, with its stored version (none from a write the new primary lacks).
  assert.equal(whole.length, stored.size);
  assert.deepEqual(whole.filter((e) => stored.get(BigInt(e.data.id)) !== BigInt(e.data.version)).slice(0, 5), [], 'events without their stored plant');
  const feedWrong = feed.refused.flatMap((r) => notA503(r) ?? []);
  assert.deepEqual(feedWrong.slice(0, 5), [], 'the feed answered other than 200 or 503');
  t.diagnostic(`feed: ${whole.length} events, ${feed.refused.length} answers 503 while following it`);

  // The webhooks too: every acknowledged plant's event reaches the subscriber.
  const missing = await waitForDeliveries(receiver, acknowledged, 30_000);
  assert.deepEqual(missing.slice(0, 10), [], `${missing.length} events never delivered`);
  assert.deepEqual(receiver.problems, []);
});

test('PostgreSQL: a connection that landed on a read-only server is closed, not pooled again: writes answer 503, then 200 as soon as the name points at the primary', { timeout: 60_000 }, async (t) => {
  assert.ok(haproxyAvailable(), 'haproxy is not installed (apt-get install -y haproxy)');
  const primary = await pgCluster(t);
  const standby = await pgStandby(t, primary, { name: 'standby1' });
  // One server whose address moves, as a DNS name does: the sessions already open stay where they were.
  const lb: Haproxy = await startPgHaproxy(t, [{ name: 'db', port: primary.port }]);
  const pointAt = async (port: number) => assert.match(await lb.command(`set server pg/db addr 127.0.0.1 port ${port}`), /port changed/);
  await eventually(async () => (await lb.states()).get('db') === 'UP', 'HAProxy sees db up', 10_000, 50);
  const env = { ...instanceEnv(`postgres://postgres:${primary.password}@127.0.0.1:${lb.port}/postgres`), WORKERS: '1', DATABASE_POOL_SIZE: '4', ...TIMEOUTS };
  await cli(env, ['migrate']);
  const { secret: token } = await createTokenCli(env, 'plants:read,plants:write', 'read-only');
  const server = await startInstance(t, env, 's1');
  let next = 1;
  const post = async () => {
    const res = await fetch(`${server.url}/plants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ id: next, name: `p${next++}` }),
    });
    return { status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.text() };
  };
  // Writers at once keep several pooled connections busy.
  const burst = () => Promise.all(Array.from({ length: 8 }, post));
  for (const r of await burst()) assert.equal(r.status, 200, r.body);

  // The name moves to the standby (a switch made too early, or an old primary back as a standby), and the
  // sessions on the primary are cut: the service's connections land there, and every write is refused by the
  // server (25006) and answered 503.
  await pointAt(standby.port);
  assert.equal((await lb.command('shutdown sessions server pg/db')).trim(), '');
  const onStandby: Awaited<ReturnType<typeof post>>[][] = [];
  for (let i = 0; i < 5; i++) onStandby.push(await burst());
  assert.deepEqual(onStandby.flat().flatMap((r) => notA503(r) ?? []).slice(0, 5), [], 'writes on the standby');
  assert.ok(onStandby.at(-1)!.every((r) => r.body.includes(ERRORS.STORE_UNAVAILABLE.message)), 'a write the standby refused says nothing was saved');

  // Back to the primary, the standby still up and the sessions on it kept. A connection pooled again after its refused
  // write would be lent again and again, each time refusing (the pool only closes one idle for 10 s); closed,
  // each is replaced by one to the primary: after at most a few refused batches, every write succeeds.
  await pointAt(primary.port);
  const back: Awaited<ReturnType<typeof post>>[][] = [];
  await eventually(async () => (back.push(await burst()), back.at(-1)!.every((r) => r.status === 200)), () => `a burst of writes all answered 200: ${JSON.stringify(back.map((b) => b.map((r) => r.status)))}`, 5_000, 0);
  const then = [await burst(), await burst(), await burst()].flat();
  assert.deepEqual(then.filter((r) => r.status !== 200).slice(0, 5), [], 'writes once the primary is reached again');
  assert.deepEqual(back.flat().flatMap((r) => (r.status === 200 ? [] : notA503(r) ?? [])).slice(0, 5), [], 'refusals other than 503');
  t.diagnostic(`bursts of 8 writes until all were 200 again: ${back.length} (${back.flat().filter((r) => r.status !== 200).length} refused)`);
});
