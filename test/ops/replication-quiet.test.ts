// A quiet store keeps replicating: serve's Litestream supervisor (with a clock the test moves) sees a store with
// nothing new to send as level with its replica, lag 0, and never restarts Litestream for quiet. After 100 s of
// quiet as the supervisor counts it, writes follow, the machine is lost (Litestream killed with -9, the store's
// files deleted) and the replica gives back every write acknowledged a sync interval and a second before.
// SQLite only (scripts/engine-only.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Registry } from 'prom-client';
import { tempDir } from '../helpers/app.js';
import { runIn } from '../helpers/cli.js';
import { capturedLogger } from '../helpers/log-lines.js';
import { eventually } from '../helpers/sleep.js';
import { parseReplicaUrls } from '../../src/replication/replica-urls.js';
import { runLitestream, writeLitestreamConfig } from '../../src/replication/litestream.js';
import { createReplication } from '../../src/replication/supervisor.js';
import { statusFile, type ReplicationStatus } from '../../src/replication/replication-status.js';

const SYNC_MS = 1_000;
const QUIET_MS = 100_000;

test('after 100 s of quiet the replica is level (lag 0, no restart), and writes made after it survive the loss of the disk', { timeout: 120_000 }, async (t) => {
  const dir = tempDir(t);
  const database = join(dir, 'store.db');
  const replicaDir = join(dir, 'replica');
  const db = new Database(database);
  db.pragma('journal_mode = WAL');
  // As the service runs under Litestream: checkpoints are Litestream's.
  db.pragma('wal_autocheckpoint = 0');
  db.exec('CREATE TABLE w (n INTEGER PRIMARY KEY, at INTEGER NOT NULL)');
  const insert = db.prepare('INSERT INTO w (n, at) VALUES (?, ?)');

  let moved = 0;
  const now = () => Date.now() + moved;
  const { lines, logger } = capturedLogger('debug');
  const replicas = parseReplicaUrls(`file://${replicaDir}`);
  const replication = createReplication({ database, replicas, syncIntervalMs: SYNC_MS, env: { PATH: process.env.PATH ?? '' }, logger, now });
  const registry = new Registry();
  replication.register(registry);
  let stopped = false;
  t.after(async () => {
    if (!stopped) await replication.stop();
    db.close();
  });
  await replication.start();
  const metric = async (name: string) => {
    const text = await registry.metrics();
    return Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  };
  const status = () => (existsSync(statusFile(database)) ? (JSON.parse(readFileSync(statusFile(database), 'utf8')) as ReplicationStatus) : undefined);
  /** Resolves once the supervisor has looked at the store twice more (it writes its status each time). */
  const twoPolls = async () => {
    const from = now();
    await eventually(() => (status()?.at ?? 0) >= from + 1_000, 'two polls of the supervisor', 10_000, 50);
  };

  // Writes, then level.
  for (let n = 1; n <= 20; n++) insert.run(n, Date.now());
  await eventually(async () => (await metric('plant_store_replication_lag_seconds')) === 0, 'the replica level with the store', 20_000, 100);
  // One more write, the last before the quiet spell: the segment that carries it starts less than a second after it.
  const segments = () => lines.filter((l) => l.msg === 'litestream: wal segment written').length;
  const before = segments();
  insert.run(0, Date.now());
  await eventually(() => segments() > before, 'the last write sent to the replica', 10_000, 20);

  // 100 s of quiet, as the supervisor's clock counts it.
  moved += QUIET_MS;
  await twoPolls();
  await twoPolls();
  assert.equal(await metric('plant_store_replication_lag_seconds'), 0, 'a quiet store is not behind');
  assert.equal(await metric('plant_store_replication_restarts_total'), 0, 'Litestream is not restarted for quiet');
  assert.deepEqual(lines.filter((l) => /restarting Litestream|litestream exited/.test(String(l.msg))).map((l) => l.msg), []);
  // The operator's command reports the same lag.
  const cli = await runIn(dir, ['replica', 'status'], { DATABASE_URL: `sqlite:${database}`, REPLICA_URL: `file://${replicaDir}`, REPLICA_SYNC_INTERVAL: '1s' });
  assert.equal(cli.code, 0, cli.stdout + cli.stderr);
  assert.match(cli.stdout, /^file .* lag 0\.0s .* ok$/m);

  // Writes after the quiet spell, for a few seconds, each acknowledged at a time (the real clock).
  const acknowledged: { n: number; at: number }[] = [];
  const until = Date.now() + 4_000;
  for (let n = 21; Date.now() < until; n++) {
    insert.run(n, Date.now());
    acknowledged.push({ n, at: Date.now() });
    await new Promise((r) => setTimeout(r, 5));
  }

  // The machine is lost: Litestream killed with -9, then the store's files.
  const pids = lines.filter((l) => l.msg === 'replicating the store with Litestream').map((l) => l.pid as number);
  assert.equal(pids.length, 1, 'Litestream started once: ' + JSON.stringify(lines.filter((l) => /replicating|exited|restart/.test(l.msg))));
  const lostAt = Date.now();
  process.kill(-pids[0]!, 'SIGKILL');
  stopped = true;
  await replication.stop();
  db.close();
  for (const suffix of ['', '-wal', '-shm']) rmSync(database + suffix, { force: true });
  rmSync(join(dir, '.store.db-litestream'), { recursive: true, force: true });

  const restored = join(dir, 'restored.db');
  const run = await runLitestream({ replicaUrls: replicas, replicaSyncIntervalMs: SYNC_MS, litestreamEnv: { PATH: process.env.PATH ?? '' } }, database, (file) => [
    'restore',
    '-config',
    file,
    '-o',
    restored,
    database,
  ]);
  assert.equal(run.code, 0, run.errors.join('\n'));
  const back = new Database(restored, { readonly: true });
  const held = new Set((back.prepare('SELECT n FROM w').all() as { n: number }[]).map((r) => r.n));
  back.close();
  const owed = acknowledged.filter((a) => a.at <= lostAt - SYNC_MS - 1_000);
  const lost = owed.filter((a) => !held.has(a.n));
  assert.ok(owed.length > 0, 'writes were acknowledged long enough before the loss');
  assert.deepEqual(lost.map((a) => `${a.n} (${lostAt - a.at} ms before the loss)`), [], `of ${owed.length} writes owed, ${held.size} rows held`);
  for (let n = 0; n <= 20; n++) assert.ok(held.has(n), `row ${n}, written before the quiet spell`);
});

test("the next Litestream start removes the configuration folder of a process killed with -9, not a live one's", (t) => {
  // The pid of a process that has exited (the kernel gives it again only after the whole pid space).
  const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout;
  const orphan = join(tmpdir(), `plant-store-litestream-${gone}-test${process.pid}`);
  const live = join(tmpdir(), `plant-store-litestream-${process.pid}-test`);
  for (const f of [orphan, live]) mkdirSync(f, { mode: 0o700 });
  t.after(() => {
    for (const f of [orphan, live]) rmSync(f, { recursive: true, force: true });
  });
  const config = writeLitestreamConfig({ database: join(tmpdir(), 'none.db'), replicas: parseReplicaUrls('file:///nowhere'), syncIntervalMs: SYNC_MS });
  config.remove();
  assert.equal(existsSync(orphan), false, "the dead process's folder is removed");
  assert.equal(existsSync(live), true, "a live process's folder stays");
});
