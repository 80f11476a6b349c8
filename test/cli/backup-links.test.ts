// `plant-store backup FILE` cannot be redirected or turned on the store: it writes through a file it creates
// exclusively under a random name (a link planted at the old predictable partial name, or at FILE, is not
// written through), the backup is 0600 whatever was at FILE, and a FILE that is the store's -wal, -shm or
// -journal file, or a link to the store, is refused while the server keeps its data (checked after a kill -9
// and a restart, which replays the WAL). restore refuses them as its backup file too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { lstatSync, readFileSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, runCli, spawnServer, tempDir } from '../helpers/app.js';

/** `plant-store backup` run through sh, which plants a link at `${FILE}.partial-<the backup's pid>` first. */
function backupAfterPlanting(file: string, victim: string, env: Record<string, string>): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    // exec keeps the shell's pid, so $$ is the pid the backup process has.
    const script = `ln -s "$VICTIM" "$FILE.partial-$$" && exec "$NODE" "$BIN" backup "$FILE"`;
    const proc = spawn('sh', ['-c', script], { env: { ...process.env, ...env, VICTIM: victim, FILE: file, NODE: process.execPath, BIN }, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    proc.on('close', (code) => resolve({ code: code ?? -1, stderr }));
  });
}

test('a link planted at the old partial name or at FILE is not written through, and the backup is 0600 whatever was at FILE', async (t) => {
  const dir = tempDir(t);
  const env = { DATABASE_URL: `sqlite:${join(dir, 'p.db')}`, BOOTSTRAP_TOKEN: 'false' };
  assert.equal((await runCli(['migrate'], env)).code, 0);
  const victim = join(dir, 'victim');
  writeFileSync(victim, 'victim', { mode: 0o644 });

  const planted = join(dir, 'planted.db');
  const res = await backupAfterPlanting(planted, victim, env);
  assert.equal(res.code, 0, res.stderr);
  assert.ok(readFileSync(victim, 'utf8') === 'victim', 'the backup wrote through the link');
  assert.ok(lstatSync(planted).isFile());
  assert.equal(statSync(planted).mode & 0o777, 0o600);

  // A link at FILE: --force replaces the link, never what it points at.
  const linked = join(dir, 'linked.db');
  symlinkSync(victim, linked);
  const refused = await runCli(['backup', linked], env);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /linked\.db exists\. Name a new file, or add --force to replace it\./);
  const forced = await runCli(['backup', '--force', linked], env);
  assert.equal(forced.code, 0, forced.stderr);
  assert.ok(readFileSync(victim, 'utf8') === 'victim', 'the backup wrote through the link');
  assert.ok(lstatSync(linked).isFile(), 'FILE is still a link');
  assert.equal(statSync(linked).mode & 0o777, 0o600);

  // A file made 0644 beforehand: the backup that replaces it is 0600.
  const open = join(dir, 'open.db');
  writeFileSync(open, 'old', { mode: 0o644 });
  assert.equal(statSync(open).mode & 0o777, 0o644);
  assert.equal((await runCli(['backup', '--force', open], env)).code, 0);
  assert.equal(statSync(open).mode & 0o777, 0o600);
  // No partial file is left anywhere, under the old name or a new one.
  assert.deepEqual(readdirSync(dir).filter((f) => f.includes('partial') && !f.startsWith('planted.db.partial-')), []);
});

test("backup refuses the store's -wal, -shm and -journal files and a link to the store; the running server keeps its data", async (t) => {
  const dir = tempDir(t);
  const store = join(dir, 'p.db');
  const env = { DATABASE_URL: `sqlite:${store}`, BOOTSTRAP_TOKEN: 'false' };
  assert.equal((await runCli(['migrate'], env)).code, 0);
  const created = await runCli(['token', 'create', '--name', 'ops', '--scopes', 'plants:read,plants:write'], env);
  const secret = created.stdout.trim().split('\n').at(-1)!;
  const server = await spawnServer(t, env);
  const headers = { authorization: `Bearer ${secret}`, 'content-type': 'application/json' };
  for (let id = 1; id <= 3; id++) {
    const res = await fetch(`${server.url}/plants`, { method: 'POST', headers, body: JSON.stringify({ id, name: `kept ${id}` }) });
    assert.equal(res.status, 200);
  }

  const link = join(dir, 'link.db');
  symlinkSync(store, link);
  const walLink = join(dir, 'wal-link');
  symlinkSync(`${store}-wal`, walLink);
  const cases: [string, RegExp][] = [
    [`${store}-wal`, /is the store's -wal file/],
    [`${store}-shm`, /is the store's -shm file/],
    [`${store}-journal`, /is the store's -journal file/],
    [link, /is the store \(/],
    [walLink, /is the store's -wal file/],
    [join(dir, '.', 'sub', '..', 'p.db-wal'), /is the store's -wal file/],
  ];
  for (const [file, why] of cases) {
    const res = await runCli(['backup', '--force', file], env);
    assert.equal(res.code, 1, `${file}: ${res.stderr}`);
    assert.match(res.stderr, new RegExp(`The backup file [^ ]*${file.split('/').at(-1)!.replace(/[.-]/g, '\\$&')} ${why.source}`), file);
    assert.match(res.stderr, /name a file outside the store's files\./);
  }
  assert.ok(lstatSync(link).isSymbolicLink());
  const restore = await runCli(['restore', '--force', `${store}-wal`], env);
  assert.equal(restore.code, 1);
  assert.match(restore.stderr, /The backup file \S*p\.db-wal is the store's -wal file/);

  // What the server acknowledged survives a crash: its WAL was not replaced.
  server.proc.kill('SIGKILL');
  await server.exited;
  const again = await spawnServer(t, env);
  for (let id = 1; id <= 3; id++) {
    const res = await fetch(`${again.url}/plants/${id}`, { headers });
    assert.equal(res.status, 200, `plant ${id}`);
  }
});
