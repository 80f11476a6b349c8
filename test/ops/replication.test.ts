// Lose the disk, lose nothing: serve with WORKERS=2 replicates its SQLite store with Litestream to a file
// replica and to a remote one (Debian's sshd as an SFTP server on 127.0.0.1), under a write load. The remote
// one goes away and comes back (every write still 200, the lag in /metrics, replica status), Litestream is
// killed and restarted by serve, a backup is taken meanwhile; then the machine is lost: kill -9 of serve's
// process group and of Litestream's, the data folder deleted, and the operator's commands from
// docs/backup.md bring the store back, latest and as of a time. SQLite only (scripts/engine-only.mjs).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, listeningUrl, tempDir } from '../helpers/app.js';
import { cleanEnv, createToken, portOf, runIn } from '../helpers/cli.js';
import { runLoad, summarize, type LoadResult } from '../helpers/load.js';
import { eventually } from '../helpers/sleep.js';
import { sftpAvailable, startSftpServer } from '../helpers/sftp-server.js';
import { openStore } from '../../src/storage/open-store.js';
import { storedPlant } from '../helpers/stored-plant.js';

const SYNC_MS = 1_000;
const FIRST_ID = 1_000_000n;

interface FeedEvent {
  id: string;
  type: string;
  data: { id: number; version: number };
}

/** The replication gauge of one replica in /metrics, or undefined while it is not there. */
async function lagOf(url: string, token: string, replica: string): Promise<number | undefined> {
  const text = await (await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${token}` } })).text();
  const m = new RegExp(`^plant_store_replication_lag_seconds\\{replica="${replica}"\\} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : undefined;
}

async function counter(url: string, token: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${token}` } })).text();
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : NaN;
}

/** Every event of the feed, paged as a client pages it. */
async function wholeFeed(url: string, token: string): Promise<FeedEvent[]> {
  const out: FeedEvent[] = [];
  let next: string | undefined = `${url}/events?limit=1000`;
  while (next) {
    const res: Response = await fetch(next, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(res.status, 200);
    out.push(...((await res.json()) as FeedEvent[]));
    const link = /<([^>]+)>; rel="next"/.exec(res.headers.get('link') ?? '');
    next = link ? new URL(link[1]!, url).href : undefined;
  }
  return out;
}

/** Modes of everything under `dir`, as "0700 path" lines, for a failure message. */
function modes(dir: string): { path: string; mode: number; folder: boolean }[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true }).map((e) => {
    const path = join(e.parentPath, e.name);
    return { path, mode: statSync(path).mode & 0o777, folder: e.isDirectory() };
  });
}

/** serve in a process group of its own under umask 022, as a shell would start it. */
async function serveGroup(t: TestContext, cwd: string, env: Record<string, string>) {
  const proc = spawn('/bin/sh', ['-c', 'umask 022 && exec "$0" "$@"', process.execPath, BIN, 'serve'], {
    cwd,
    env: cleanEnv({ PORT: '0', LOG_LEVEL: 'info', ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | string>((resolve) => proc.on('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  const killAll = () => {
    try {
      process.kill(-proc.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  };
  t.after(killAll);
  const url = await listeningUrl(proc, () => out);
  return { proc, url, output: () => out, exited, killAll };
}

/** The pid Litestream runs under, from serve's log line announcing it. */
function litestreamPids(output: string): number[] {
  return [...output.matchAll(/"pid":(\d+),"msg":"replicating the store with Litestream"/g)].map((m) => Number(m[1]));
}

test('SQLite replicated by Litestream to a file and an SFTP replica: writes go on while a replica is away, and after the disk is lost restore --from-replica brings back every write acknowledged a sync interval before, latest or as of a time', { timeout: 420_000 }, async (t) => {
  assert.ok(sftpAvailable(), 'sshd is not installed (apt-get install -y openssh-server)');
  const dir = tempDir(t);
  const sftp = await startSftpServer(t);
  const fileReplica = join(dir, 'replica');
  const store = join(dir, 'data', 'plant-store.db');
  const env = {
    DATABASE_URL: `sqlite:${store}`,
    REPLICA_URL: `file://${fileReplica},sftp://${sftp.user}@127.0.0.1:${sftp.port}${sftp.root}/plant-store?key-path=${sftp.keyPath}`,
    REPLICA_SYNC_INTERVAL: `${SYNC_MS / 1_000}s`,
    WORKERS: '2',
    BOOTSTRAP_TOKEN: 'false',
  };
  const token = await createToken(env.DATABASE_URL, 'plants:read,plants:write,metrics:read');
  const server = await serveGroup(t, dir, env);
  const port = portOf(server.url);
  const cli = (args: string[], extra: Record<string, string> = {}) => runIn(dir, args, { ...env, ...extra }, 120_000);

  // Both replicas hold the store once Litestream has synced.
  await eventually(async () => (await cli(['replica', 'status'])).code === 0, 'replica status 0 with both replicas synced', 20_000, 250);

  // Its configuration and everything it made are owner-only, under umask 022.
  const [litestreamPid] = litestreamPids(server.output());
  assert.ok(litestreamPid, 'serve names the pid Litestream runs under');
  const args = readFileSync(`/proc/${litestreamPid}/cmdline`, 'utf8').split('\0');
  const configFile = args[args.indexOf('-config') + 1]!;
  assert.equal(statSync(configFile).mode & 0o777, 0o600, 'the configuration file');
  assert.equal(statSync(join(configFile, '..')).mode & 0o777, 0o700, "the configuration's folder");
  assert.doesNotMatch(readFileSync(configFile, 'utf8'), /pst_|password/i, 'no secret in the configuration');
  for (const where of [fileReplica, join(dir, 'data')]) {
    for (const f of modes(where)) assert.equal(f.mode, f.folder ? 0o700 : 0o600, `${f.path} is ${f.mode.toString(8)}`);
  }

  let stop = false;
  let killed = false;
  const live: LoadResult = { ok: new Map(), statuses: new Map(), errors: new Map(), sent: 0 };
  const t0 = Date.now();
  // A steady load (a few hundred writes a second here), which Litestream keeps up with: on a machine it saturates,
  // the replicas fall behind by more than the interval, which /metrics shows as lag.
  const load = runLoad({ port, token, clients: 8, pauseMs: 20, firstId: FIRST_ID, until: () => stop, stopOnError: () => killed, result: live, startedAt: t0 });
  t.after(() => {
    stop = true;
  });
  const acknowledged = (n: number) => eventually(() => live.ok.size >= n, () => `${n} writes acknowledged (${summarize(live)})`, 30_000, 50);
  const sinceStart = (ms: number) => ms + t0;
  /** Whether both replicas, as `replica status` says, last synced after `time`. */
  const syncedSince = async (time: number) => {
    const synced = [...(await cli(['replica', 'status'])).stdout.matchAll(/^(?:file|sftp) .* synced (\S+) /gm)].map((m) => Date.parse(m[1]!));
    return synced.length === 2 && synced.every((t) => t > time);
  };
  await acknowledged(200);

  // A backup while Litestream replicates: both go on.
  const backup = await cli(['backup', join(dir, 'backup.db')]);
  assert.equal(backup.code, 0, backup.stderr);

  // The remote replica goes away: every write is still answered 200, its lag grows, replica status fails.
  await sftp.stop();
  await eventually(async () => ((await lagOf(server.url, token, 'sftp')) ?? 0) >= 3, 'the SFTP replica lagging 3 s', 20_000, 200);
  assert.ok((await lagOf(server.url, token, 'file'))! < 3, 'the file replica keeps up meanwhile');
  const away = await cli(['replica', 'status']);
  assert.equal(away.code, 1, away.stdout);
  assert.match(away.stdout, /^sftp .* unreachable: /m);
  assert.match(away.stdout, /^file .* ok$/m);
  // GET /status says the same, whichever worker answers: two workers, the file replica synced lately, SFTP behind.
  const status = (await (await fetch(`${server.url}/status`, { headers: { authorization: `Bearer ${token}` } })).json()) as {
    workers: number;
    store: { engine: string; sizeBytes: number };
    replicas: { name: string; state: string; lagSeconds: number; lastSyncAt?: string }[];
  };
  assert.equal(status.workers, 2);
  assert.equal(status.store.engine, 'sqlite');
  assert.ok(status.store.sizeBytes > 0);
  const [file, remote] = status.replicas;
  assert.deepEqual([file?.name, remote?.name], ['file', 'sftp']);
  assert.ok(remote!.state === 'behind' && remote!.lagSeconds >= 3, JSON.stringify(status.replicas));
  assert.ok(Date.now() - Date.parse(file!.lastSyncAt!) < 10_000, JSON.stringify(status.replicas));
  await eventually(async () => (await counter(server.url, token, 'plant_store_replication_failures_total\\{replica="sftp"\\}')) > 0, 'failures of the SFTP replica counted', 30_000, 200);
  assert.deepEqual([...live.statuses.keys()], [], `every write answered 200 while a replica is away: ${summarize(live)}`);

  // Back: the lag returns to about the sync interval.
  await sftp.start();
  await eventually(async () => ((await lagOf(server.url, token, 'sftp')) ?? 99) <= 2.5, 'the SFTP replica caught up', 30_000, 200);

  // Litestream dies: serve starts it again, and replication goes on.
  const restarts = await counter(server.url, token, 'plant_store_replication_restarts_total');
  const running = litestreamPids(server.output()).at(-1)!;
  process.kill(running, 'SIGKILL');
  await eventually(async () => (await counter(server.url, token, 'plant_store_replication_restarts_total')) === restarts + 1, 'Litestream restarted', 20_000, 100);
  const restartedAt = Date.now();
  // A new generation's first sync sends the whole database (over 100 MB by now): through SFTP on a busy 2-core
  // machine it has taken more than 60 s.
  await eventually(async () => ((await lagOf(server.url, token, 'file')) ?? 99) <= 2.5 && ((await lagOf(server.url, token, 'sftp')) ?? 99) <= 2.5, 'both replicas caught up after the restart', 120_000, 200);
  // --at restores from the generation whose span holds the time. A Litestream killed mid-write may start a new
  // generation when it comes back, and under load its first snapshot can come seconds later: the time is taken
  // once both replicas have synced in it since the restart (seen once as "no matching backups found").
  let lastStatus = '';
  const syncedAfterRestart = async () => {
    lastStatus = (await cli(['replica', 'status'])).stdout;
    return syncedSince(restartedAt);
  };
  // The status seen last goes into the failure message: a replica that never showed a later sync says which.
  await eventually(syncedAfterRestart, () => `both replicas synced since the restart (${new Date(restartedAt).toISOString()}); replica status said:\n${lastStatus}`, 120_000, 250);

  // The point in time for --at, in the middle of the load.
  await acknowledged(live.ok.size + 300);
  const at = Date.now();
  // Writes on both sides of it, and the replicas synced past the later ones.
  const laterThanAt = () => [...live.ok.values()].filter((a) => sinceStart(a) >= at + 1_500).length;
  await eventually(() => laterThanAt() >= 300, () => `300 writes acknowledged 1.5 s after --at (${laterThanAt()})`, 30_000, 50);
  const laterAt = Date.now();
  await eventually(() => syncedSince(laterAt), 'both replicas synced since the writes after --at', 30_000, 250);
  t.diagnostic(`lag before the loss: file ${(await lagOf(server.url, token, 'file'))?.toFixed(1)} s, sftp ${(await lagOf(server.url, token, 'sftp'))?.toFixed(1)} s`);
  // The feed as a client saw it just before the machine was lost.
  const feed = await wholeFeed(server.url, token);
  // Writes go on after the client's last look.
  await acknowledged(live.ok.size + 100);

  // The machine is lost: serve, its workers and Litestream all at once, then the disk.
  const killAt = Date.now();
  killed = true;
  stop = true;
  for (const pid of litestreamPids(server.output())) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // the one killed above
    }
  }
  server.killAll();
  assert.equal(await server.exited, 'SIGKILL');
  const result = await load;
  t.diagnostic(summarize(result));
  assert.deepEqual([...result.statuses.keys()], [], `no write refused before the kill: ${summarize(result)}`);
  rmSync(join(dir, 'data'), { recursive: true, force: true });

  // docs/backup.md, "A lost disk": restore from the replicas, then start serve again.
  const restored = await cli(['restore', '--from-replica']);
  assert.equal(restored.code, 0, restored.stderr);
  assert.match(restored.stdout, /the integrity check passed/);
  const { store: after } = await openStore(env.DATABASE_URL);
  let lastSecond = 0;
  let lastSecondKept = 0;
  try {
    const missing: bigint[] = [];
    for (const [id, ackedAt] of result.ok) {
      const kept = (await storedPlant(after, id)) !== undefined;
      if (sinceStart(ackedAt) <= killAt - SYNC_MS - 1_000 && !kept) missing.push(id);
      if (sinceStart(ackedAt) > killAt - 1_000) {
        lastSecond++;
        if (kept) lastSecondKept++;
      }
    }
    assert.deepEqual(missing, [], `${missing.length} writes acknowledged more than ${SYNC_MS + 1_000} ms before the loss are missing`);
  } finally {
    await after.close();
  }
  t.diagnostic(`of the writes acknowledged in the last second before the loss, ${lastSecondKept} of ${lastSecond} survived`);

  // Versions continue above every version issued before, and the feed goes on from the restored point.
  const highest = Math.max(...feed.map((e) => e.data.version));
  const again = await serveGroup(t, dir, { ...env, REPLICA_URL: '' });
  const created = await fetch(`${again.url}/plants`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ id: 42, name: 'after the loss' }),
  });
  assert.equal(created.status, 200);
  assert.ok(Number(JSON.parse(created.headers.get('etag')!)) > highest, 'versions continue above every one issued before the loss');
  again.proc.kill('SIGTERM');
  assert.equal(await again.exited, 0);

  // docs/backup.md, "Undo the last hour": the store as it was at `at`, over the restored one.
  const undo = await cli(['restore', '--from-replica', '--at', new Date(at).toISOString(), '--force']);
  assert.equal(undo.code, 0, undo.stderr);
  const { store: then } = await openStore(env.DATABASE_URL);
  try {
    const before = [...result.ok].filter(([, a]) => sinceStart(a) <= at - SYNC_MS - 1_500);
    const later = [...result.ok].filter(([, a]) => sinceStart(a) >= at + 1_500);
    assert.ok(before.length > 100 && later.length > 100, `writes on both sides of --at: ${before.length} before, ${later.length} after`);
    const kept = new Map<bigint, boolean>();
    for (const [id] of result.ok) kept.set(id, (await storedPlant(then, id)) !== undefined);
    const offsets = (rows: [bigint, number][]) => rows.map(([id, a]) => `${id}@${sinceStart(a) - at}ms`).slice(0, 20).join(' ');
    const lastKept = Math.max(...[...result.ok].filter(([id]) => kept.get(id)).map(([, a]) => sinceStart(a) - at));
    const lostBefore = before.filter(([id]) => !kept.get(id));
    const keptLater = later.filter(([id]) => kept.get(id));
    assert.deepEqual(offsets(lostBefore), '', `acknowledged well before --at and not there (the last one there was acknowledged ${lastKept} ms from --at; ${undo.stdout})`);
    assert.deepEqual(offsets(keptLater), '', `acknowledged well after --at and there`);
  } finally {
    await then.close();
  }
  // A cursor made after the restored point answers 410, as after any restore.
  const third = await serveGroup(t, dir, { ...env, REPLICA_URL: '' });
  const gone = feed.at(-1)!;
  const res = await fetch(`${third.url}/events?after=${gone.id}`, { headers: { authorization: `Bearer ${token}` } });
  assert.equal(res.status, 410, await res.text());
  third.proc.kill('SIGTERM');
  assert.equal(await third.exited, 0);
});

test('SIGTERM: Litestream is stopped after the store closes, so the last writes reach the replica even with a long sync interval', async (t) => {
  const dir = tempDir(t);
  const env = { DATABASE_URL: `sqlite:${join(dir, 'data', 'plant-store.db')}`, REPLICA_URL: `file://${join(dir, 'replica')}`, REPLICA_SYNC_INTERVAL: '60s', WORKERS: '2', BOOTSTRAP_TOKEN: 'false' };
  const token = await createToken(env.DATABASE_URL);
  const server = await serveGroup(t, dir, env);
  // The replica holds the store as it was before the writes: a snapshot, then nothing for 60 s.
  await eventually(async () => (await runIn(dir, ['replica', 'status'], env)).code === 0, 'the first sync', 20_000, 250);
  const ids = [1, 2, 3, 4, 5];
  for (const id of ids) {
    const res = await fetch(`${server.url}/plants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ id, name: `last ${id}` }),
    });
    assert.equal(res.status, 200);
  }
  // Ctrl-C, as a terminal sends it to serve's process group: Litestream, in a group of its own, is not stopped by it.
  process.kill(-server.proc.pid!, 'SIGINT');
  assert.equal(await server.exited, 0);
  assert.doesNotMatch(server.output(), /litestream exited; replication is paused/, 'Litestream was stopped by serve, not by the signal');
  const restored = await runIn(dir, ['restore', '--from-replica'], { ...env, DATABASE_URL: `sqlite:${join(dir, 'restored.db')}` }, 60_000);
  assert.equal(restored.code, 0, restored.stderr);
  assert.match(restored.stdout, /^ {2}plants: 5$/m);
});
