// Every file and folder the server and the CLI create is owner-only whatever the umask: run here under umask
// 022 (children inherit it), the server makes the data folders 0700 and the database with its -wal and -shm
// 0600; the CLI's backup, restore (folder and store) and migrate of a new store the same.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { runCli, spawnServer, tempDir } from '../helpers/app.js';

function mode(path: string): string {
  return (statSync(path).mode & 0o777).toString(8);
}

test('under umask 022 the server and the CLI create owner-only files (0600) and folders (0700)', async (t) => {
  const previous = process.umask(0o022);
  t.after(() => process.umask(previous));
  const dir = tempDir(t);
  const store = join(dir, 'data', 'plants', 'p.db');
  const env = { DATABASE_URL: `sqlite:${store}`, BOOTSTRAP_TOKEN: 'false' };

  const server = await spawnServer(t, env);
  const created = await runCli(['token', 'create', '--name', 'ops', '--scopes', 'plants:write'], env);
  assert.equal(created.code, 0, created.stderr);
  const secret = created.stdout.trim().split('\n').at(-1)!;
  const res = await fetch(`${server.url}/plants`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ id: 1, name: 'fern' }),
  });
  assert.equal(res.status, 200);
  const modes = (paths: string[]) => Object.fromEntries(paths.map((p) => [p.slice(dir.length), mode(p)]));
  assert.deepEqual(modes([join(dir, 'data'), join(dir, 'data', 'plants'), store, `${store}-wal`, `${store}-shm`]), {
    '/data': '700',
    '/data/plants': '700',
    '/data/plants/p.db': '600',
    '/data/plants/p.db-wal': '600',
    '/data/plants/p.db-shm': '600',
  });

  const backup = join(dir, 'b.db');
  assert.equal((await runCli(['backup', backup], env)).code, 0);
  server.proc.kill('SIGTERM');
  await server.exited;

  const restored = join(dir, 'restored', 'r.db');
  const restore = await runCli(['restore', backup], { ...env, DATABASE_URL: `sqlite:${restored}` });
  assert.equal(restore.code, 0, restore.stderr);
  const migrated = join(dir, 'cli', 'm.db');
  assert.equal((await runCli(['migrate'], { ...env, DATABASE_URL: `sqlite:${migrated}` })).code, 0);
  const made = [backup, join(dir, 'restored'), restored, join(dir, 'cli'), migrated].flatMap((p) => [p, `${p}-wal`, `${p}-shm`, `${p}-journal`]).filter((p) => existsSync(p));
  assert.deepEqual(modes(made), Object.fromEntries(made.map((p) => [p.slice(dir.length), statSync(p).isDirectory() ? '700' : '600'])));
  assert.ok(made.length >= 5, made.join(', '));
});
