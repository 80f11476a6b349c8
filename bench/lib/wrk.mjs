// One wrk run pinned to the load core (or the given ones), shared by run.mjs, pair.mjs and workers.mjs.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { BENCH_DIR, LOAD_CORE } from './servers.mjs';

const execFileP = promisify(execFile);

/**
 * Runs wrk/<script>.lua against 127.0.0.1:port and returns the summary its done() prints, plus busy_s: the
 * duration less each connection's first-request pause. `salt` makes the POSTs' ids unique to this run; `env`
 * carries the script's settings (BENCH_TOKEN, BENCH_SEEDED, ...).
 */
export async function runWrk({ script, port, conns, seconds, salt, connectPauseMs, env = {}, cores = LOAD_CORE, threads = 1 }) {
  const args = ['-c', cores, 'wrk', '-t', String(threads), '-c', String(conns), '-d', `${seconds}s`, '--timeout', '10s',
    '-s', join(BENCH_DIR, 'wrk', `${script}.lua`), `http://127.0.0.1:${port}`];
  const { stdout } = await execFileP('taskset', args, {
    env: {
      ...process.env, BENCH_WRK_DIR: join(BENCH_DIR, 'wrk'), BENCH_SALT: String(salt),
      BENCH_CONNS: String(conns), BENCH_CONNECT_PAUSE_MS: String(connectPauseMs), ...env,
    },
    timeout: (seconds + 30) * 1000,
  });
  const line = stdout.split('\n').find((l) => l.startsWith('BENCHJSON '));
  if (!line) throw new Error(`wrk printed no summary:\n${stdout}`);
  const r = JSON.parse(line.slice(10));
  return { ...r, busy_s: r.duration_us / 1e6 - connectPauseMs / 1000 };
}
