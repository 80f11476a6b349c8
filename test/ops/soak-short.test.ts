// The soak script's short mode as a CI check: 15 s of constant-rate creates and reads against a real
// server, with zero errors and every acknowledged create in the file afterwards (integrity_check ok).
// The 10-minute run at 70% of capacity is run by hand: node scripts/soak.mjs (docs/operations.md, Soak).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { cleanEnv } from '../helpers/cli.js';

const SCRIPT = fileURLToPath(new URL('../../../scripts/soak.mjs', import.meta.url));

test('soak, short: constant rate for 15 s, zero errors, every acknowledged create present', async (t) => {
  const proc = spawn(process.execPath, [SCRIPT, '--duration', '15', '--rate', '100', '--interval', '5', '--json'], {
    // A shared CI machine can pause a process for over a second; that is not the overload shedding is for
    // (test/limits/load-shedding.test.ts covers it), so this run does not shed on event-loop delay.
    env: cleanEnv({ SHED_EVENT_LOOP_DELAY_MS: '0' }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const killer = setTimeout(() => proc.kill('SIGKILL'), 55_000);
  const code = await new Promise<number | null>((r) => proc.on('exit', (c) => r(c)));
  clearTimeout(killer);
  for (const line of err.trim().split('\n')) t.diagnostic(line);
  const summary = JSON.parse(out.trim().split('\n').at(-1) ?? '{}') as {
    requests: number; errors: number; acknowledgedWrites: number; missing: number; integrity: string; serverExit: number;
  };
  assert.equal(summary.errors, 0, err);
  assert.equal(summary.missing, 0);
  assert.equal(summary.integrity, 'ok');
  assert.equal(summary.serverExit, 0);
  assert.ok(summary.requests >= 1_400, `the rate was kept (${summary.requests} requests)`);
  assert.ok(summary.acknowledgedWrites >= 500, `creates were acknowledged (${summary.acknowledgedWrites})`);
  assert.equal(code, 0, err);
});
