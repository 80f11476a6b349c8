// `plant-store serve` that cannot start says one clear line and exits 1, promptly: a port in use names PORT,
// HOST and the address, once, with one worker or several; a SQLite path whose folder cannot be made names
// DATABASE_URL within a second (Node's recursive mkdir used to loop for ever on /proc, deaf to SIGTERM).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { BIN, freshDatabaseUrl, TEST_STORE } from '../helpers/app.js';

/** Runs `serve` to its exit, killed after `limitMs` (then `code` is the signal). */
function serveUntilExit(env: Record<string, string>, limitMs: number): Promise<{ code: number | string; ms: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const started = Date.now();
    const proc = spawn(process.execPath, [BIN, 'serve'], { env: { ...process.env, LOG_LEVEL: 'info', BOOTSTRAP_TOKEN: 'false', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const limit = setTimeout(() => proc.kill('SIGKILL'), limitMs);
    proc.on('close', (code, signal) => {
      clearTimeout(limit);
      resolve({ code: code ?? signal ?? -1, ms: Date.now() - started, stdout, stderr });
    });
  });
}

/** Lines of both streams, log lines and plain ones alike, that match `pattern`. */
function linesMatching(run: { stdout: string; stderr: string }, pattern: RegExp): string[] {
  return `${run.stdout}\n${run.stderr}`.split('\n').filter((l) => pattern.test(l));
}

test('a port in use: one line naming PORT, HOST and the address, exit 1, with one worker and with two', async (t) => {
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  t.after(() => holder.close());
  const port = (holder.address() as AddressInfo).port;
  for (const workers of ['2', '1']) {
    const run = await serveUntilExit({ DATABASE_URL: await freshDatabaseUrl(t), PORT: String(port), HOST: '127.0.0.1', WORKERS: workers }, 10_000);
    const what = `WORKERS=${workers}: exit ${run.code} after ${run.ms} ms\n${run.stdout}\n${run.stderr}`;
    assert.equal(run.code, 1, what);
    const lines = linesMatching(run, /in use|EADDRINUSE/);
    assert.equal(lines.length, 1, what);
    assert.equal(lines[0], `plant-store: Cannot listen on PORT=${port} HOST=127.0.0.1: the address is already in use (EADDRINUSE 127.0.0.1:${port}). Stop the process that listens there, or set PORT to a free port.`);
    assert.deepEqual(linesMatching(run, /could not start|exit code|"level":50/), [], what);
    t.diagnostic(`WORKERS=${workers}: exit 1 after ${run.ms} ms`);
  }
});

test('DATABASE_URL whose folder cannot be created (/proc): one line naming DATABASE_URL and exit 1 at once, where it used to loop for ever', async (t) => {
  if (TEST_STORE !== 'sqlite') return t.skip('a SQLite path; the PostgreSQL run would repeat the same test');
  for (const workers of ['2', '1']) {
    const run = await serveUntilExit({ DATABASE_URL: 'sqlite:/proc/nope/x.db', PORT: '0', WORKERS: workers }, 10_000);
    const what = `WORKERS=${workers}: exit ${run.code} after ${run.ms} ms\n${run.stdout}\n${run.stderr}`;
    assert.equal(run.code, 1, what);
    const lines = linesMatching(run, /DATABASE_URL|\/proc\/nope/);
    assert.equal(lines.length, 1, what);
    assert.match(lines[0]!, /^plant-store: DATABASE_URL=sqlite:\/proc\/nope\/x\.db cannot be used: cannot create the folder \/proc\/nope /, what);
    // Node's start and the web stack's load included; the failure itself takes a millisecond. Bounded loosely
    // for a loaded CI machine: what it used to do was never end.
    assert.ok(run.ms < 3_000, what);
    t.diagnostic(`WORKERS=${workers}: exit 1 after ${run.ms} ms`);
  }
});
