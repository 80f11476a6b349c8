// The throwaway PostgreSQL cluster helper: it starts on loopback with a password, stops, restarts on the same
// port, survives an immediate (crash) shutdown, and leaves nothing behind.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { existsSync } from 'node:fs';
import { pgCluster } from '../helpers/pg-cluster.js';

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
