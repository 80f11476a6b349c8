// The disk fills while the server writes: creates that cannot commit get 503 with an Error body (never
// 500, never a crash), every acknowledged plant is still there, the file passes PRAGMA integrity_check,
// and once space returns the same process accepts writes again. The database lives on a 4 MiB tmpfs
// (mounting needs root with CAP_SYS_ADMIN; without it the test is skipped, saying so).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmdirSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { spawnServer } from '../helpers/app.js';
import { plantJson, postRaw } from '../helpers/raw-request.js';
import { eventually } from '../helpers/sleep.js';
import { createToken, portOf } from '../helpers/cli.js';

/** Mounts a small tmpfs, or says why it cannot. */
function smallFilesystem(): { dir: string; unmount: () => void } | string {
  if (process.getuid?.() !== 0) return 'needs root to mount a size-limited tmpfs';
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-full-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', dir], { stdio: 'pipe' });
  } catch (err) {
    rmdirSync(dir);
    return `cannot mount a tmpfs here (${String((err as { stderr?: Buffer }).stderr ?? err).trim()})`;
  }
  return {
    dir,
    unmount: () => {
      execFileSync('umount', ['-l', dir]);
      rmdirSync(dir);
    },
  };
}

/** The longest name a plant may have (maxLength 256), so each write takes as much room as one can. */
const NAME = 'x'.repeat(256);

test('disk full: 503s, no crash, nothing acknowledged lost, integrity ok, recovery without restart', async (t) => {
  const fs = smallFilesystem();
  if (typeof fs === 'string') return t.skip(fs);
  t.after(fs.unmount);
  const file = join(fs.dir, 'plants.db');
  const databaseUrl = `sqlite:${file}`;
  const token = await createToken(databaseUrl);
  const server = await spawnServer(t, { DATABASE_URL: databaseUrl, BOOTSTRAP_TOKEN: 'false' });
  const port = portOf(server.url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  t.after(() => agent.destroy());

  // Leave about 300 KiB free, then write until the disk refuses a good number of commits.
  const free = () => { const s = statfsSync(fs.dir); return s.bavail * s.bsize; };
  const filler = join(fs.dir, 'filler');
  writeFileSync(filler, Buffer.alloc(Math.max(0, free() - 300 * 1024)));

  const acknowledged: bigint[] = [];
  const statuses = new Map<number, number>();
  let refused = 0;
  let next = 1n;
  const deadline = Date.now() + 60_000;
  const client = async () => {
    while (refused < 40 && Date.now() < deadline) {
      const id = next++;
      const out = await postRaw(port, token, plantJson(id, NAME), { agent });
      assert.equal(out.kind, 'response', `request ${id} got no answer: ${JSON.stringify(out)}`);
      if (out.kind !== 'response') return;
      statuses.set(out.status, (statuses.get(out.status) ?? 0) + 1);
      if (out.status === 200) acknowledged.push(id);
      else {
        assert.equal(out.status, 503, `only 200 or 503 while the disk fills, got ${out.status}: ${out.body}`);
        assert.deepEqual(Object.keys(JSON.parse(out.body)).sort(), ['error', 'message']);
        assert.equal(JSON.parse(out.body).error, 503);
        refused++;
      }
    }
  };
  await Promise.all(Array.from({ length: 8 }, client));
  t.diagnostic(`while filling: ${JSON.stringify(Object.fromEntries(statuses))}, free ${free()} bytes`);
  assert.ok(refused >= 40, `the disk filled and commits were refused (${JSON.stringify(Object.fromEntries(statuses))})`);
  assert.ok(acknowledged.length > 0, 'some writes succeeded before the disk filled');
  assert.equal(server.proc.exitCode, null, `the server is still running\n${server.stderr()}`);
  const health = await fetch(`${server.url}/healthz`);
  assert.equal(health.status, 200);
  await health.arrayBuffer();

  // Space returns: the same process takes writes again.
  rmSync(filler);
  let tries = 0;
  const takesWrites = async () => {
    const id = 1_000_000n + BigInt(tries++);
    const out = await postRaw(port, token, plantJson(id, NAME), { agent });
    assert.ok(out.kind === 'response' && (out.status === 200 || out.status === 503), JSON.stringify(out));
    return out.status === 200 && id;
  };
  acknowledged.push(await eventually(takesWrites, 'writes succeed again once space returns', 15_000, 100));

  server.proc.kill('SIGTERM');
  assert.equal(await server.exited, 0, server.stderr());
  const db = new Database(file, { readonly: true });
  try {
    assert.deepEqual(db.pragma('integrity_check'), [{ integrity_check: 'ok' }]);
    const has = db.prepare('SELECT name FROM plants WHERE id = ?').safeIntegers(true);
    const missing = acknowledged.filter((id) => (has.get(id) as { name: string } | undefined)?.name !== NAME);
    assert.deepEqual(missing, [], `${missing.length} acknowledged plants lost`);
  } finally {
    db.close();
  }
});
