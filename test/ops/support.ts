// npm as it runs on a machine whose own Node.js is 20, for the package and install tests.
import { execFileSync, spawnSync } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Runs npm (`npx` with `npx: true`) on Node.js 20, as on a machine whose own Node.js is 20: npm compares the
 * packages' `engines` with the Node.js that runs it. The npm is the one running the tests (or the one on PATH).
 */
export function npmOnNode20(args: string[], cwd: string, options: { npx?: boolean; timeoutMs?: number } = {}): { status: number | null; stdout: string; stderr: string } {
  const node20 = execFileSync(process.execPath, [fileURLToPath(new URL('../../../scripts/runtimes.mjs', import.meta.url)), '20'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
  const fromNpm = process.env.npm_execpath;
  const npmCli = fromNpm && /npm-cli\.js$/.test(fromNpm) ? fromNpm : realpathSync(execFileSync('sh', ['-c', 'command -v npm'], { encoding: 'utf8' }).trim());
  const cli = options.npx ? join(dirname(npmCli), 'npx-cli.js') : npmCli;
  const r = spawnSync(node20, [cli, ...args], { cwd, encoding: 'utf8', timeout: options.timeoutMs ?? 240_000, env: { ...process.env, npm_config_update_notifier: 'false' } });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The packages npm warned `EBADENGINE` about, by name (no version), each once, sorted. */
export function badEnginePackages(stderr: string): string[] {
  return [...new Set([...stderr.matchAll(/^npm warn EBADENGINE +package: '(.+)@[^@']+',?$/gm)].map((m) => m[1]!))].sort();
}
