// The throwaway PostgreSQL cluster helper: it starts on loopback with a password, stops, restarts on the same
// port, survives an immediate (crash) shutdown, and leaves nothing behind; its standby streams synchronously,
// is read-only until promoted, and takes over once the primary is crashed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { existsSync } from 'node:fs';
import pg from 'pg';
import { pgCluster, pgStandby } from '../helpers/pg-cluster.js';
import { eventually } from '../helpers/sleep.js';

const accepts = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });

test('pg-cluster: start, stop, start, kill, start, destroy', async (t) => {
  const c = await pgCluster(t);
  assert.match(c.url, new RegExp(`^postgres://postgres:${c.password}@127\\.0\\.0\\.1:${c.port}/postgres$`));
  assert.equal(await accepts(c.port), true);
  await c.stop();
  assert.equal(await accepts(c.port), false);
  await c.start();
  assert.equal(await accepts(c.port), true);
  await c.kill();
  assert.equal(await accepts(c.port), false);
  await c.start();
  assert.equal(await accepts(c.port), true);
  await c.destroy();
  assert.equal(await accepts(c.port), false);
  assert.equal(existsSync(c.dir), false);
});

test('pg-cluster: a synchronous standby has every commit, refuses writes (25006) until promoted, then takes them; crash() kills the primary at once', async (t) => {
  const primary = await pgCluster(t);
  const standby = await pgStandby(t, primary, { name: 'sb', synchronous: true });
  const on = async (url: string, sql: string) => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return (await client.query(sql)).rows;
    } finally {
      await client.end();
    }
  };
  assert.deepEqual(await on(primary.url, "SELECT sync_state FROM pg_stat_replication WHERE application_name = 'sb'"), [{ sync_state: 'sync' }]);
  await on(primary.url, 'CREATE TABLE t (x int); INSERT INTO t VALUES (1)');
  // Synchronous commit: flushed on the standby when the primary answered; visible there once replayed.
  await eventually(async () => (await on(standby.url, 'SELECT count(*)::int AS n FROM t').catch(() => [{ n: 0 }]))[0]!.n === 1, 'the row on the standby', 5_000, 20);
  await assert.rejects(on(standby.url, 'INSERT INTO t VALUES (2)'), { code: '25006' });
  await primary.crash();
  assert.equal(await accepts(primary.port), false);
  await standby.promote();
  await on(standby.url, 'INSERT INTO t VALUES (2)');
  assert.deepEqual(await on(standby.url, 'SELECT x FROM t ORDER BY x'), [{ x: 1 }, { x: 2 }]);
  await primary.destroy();
  assert.equal(existsSync(primary.dir), false);
});
