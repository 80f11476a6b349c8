// Running the real `plant-store` command the way an operator does: the CLI in a chosen working directory with
// exactly the environment given (no inherited plant-store variables), `serve` in such a directory, and tokens
// and databases made through the CLI.
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { BIN, runCli, spawnServer, tempDir, type ChildServer } from './app.js';
import { freshPostgresUrl, templateDatabase, TEST_STORE } from './test-store.js';

export interface Env {
  [name: string]: string | undefined;
}

/** The environment of the test process minus every variable plant-store reads, so defaults are really defaults. */
export function cleanEnv(extra: Env = {}): Record<string, string> {
  const out: Record<string, string> = {};
  const ours = /^(PORT|HOST|DATABASE_[A-Z_]+|LOG_LEVEL|BODY_LIMIT_BYTES|REQUEST_TIMEOUT_MS|HEADERS_TIMEOUT_MS|KEEP_ALIVE_TIMEOUT_MS|SHUTDOWN_TIMEOUT_MS|TOKEN_CACHE_TTL_MS|AUTH_FAILURES_PER_MINUTE|BOOTSTRAP_TOKEN|WEBHOOK_[A-Z_]+|CORS_ORIGINS|RATE_LIMIT(_[A-Z_]+)?|TRUST_PROXY|SHED_[A-Z_]+|JWT_[A-Z0-9_]+|OTEL_[A-Z_]+|REPLICA_[A-Z_]+)$/;
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !ours.test(k)) out[k] = v;
  for (const [k, v] of Object.entries(extra)) if (v !== undefined) out[k] = v;
  return out;
}

/**
 * Runs the CLI to completion in `cwd` with exactly `env` (no inherited plant-store variables). A command
 * still running after `timeoutMs` is killed, and reported with signal SIGKILL, rather than hanging the test.
 */
export function runIn(
  cwd: string,
  args: string[],
  env: Env = {},
  timeoutMs = 20_000,
): Promise<{ code: number | null; signal: string | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const proc = spawn(process.execPath, [BIN, ...args], { cwd, env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs);
    proc.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    // 'close', not 'exit': output still in the pipes when the process exits would be lost.
    proc.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** `plant-store serve` in `cwd` with exactly `env`; resolves once it listens. Killed after the test. */
export function serveIn(t: TestContext, cwd: string, env: Env = {}): Promise<ChildServer> {
  return spawnServer(t, {}, { cwd, fullEnv: cleanEnv({ PORT: '0', LOG_LEVEL: 'info', ...env }) });
}

/** Creates a token with the real CLI and returns its secret (the last line of stdout). */
export async function createToken(databaseUrl: string, scopes = 'plants:read,plants:write'): Promise<string> {
  // Token commands never create a database: make it as the docs say, with `migrate`.
  const migrated = await runCli(['migrate'], { DATABASE_URL: databaseUrl });
  if (migrated.code !== 0) throw new Error(`migrate failed (${migrated.code}): ${migrated.stderr}`);
  const r = await runCli(['token', 'create', '--scopes', scopes, '--name', 'test'], { DATABASE_URL: databaseUrl });
  if (r.code !== 0) throw new Error(`token create failed (${r.code}): ${r.stderr}`);
  const secret = r.stdout.trim().split('\n').at(-1)!;
  if (!/^pst_/.test(secret)) throw new Error(`unexpected token line: ${secret}`);
  return secret;
}

let template: Promise<{ file: string; token: string }> | undefined;
let pgTemplate: Promise<{ url: string; token: string }> | undefined;

/**
 * A new database of the store under test holding one token (both scopes) made by the real
 * `plant-store token create`. The CLI runs once per test file; each caller gets its own copy of the result.
 */
export async function databaseWithToken(t: TestContext): Promise<{ databaseUrl: string; token: string }> {
  if (TEST_STORE === 'postgres') {
    pgTemplate ??= (async () => {
      let token = '';
      const url = await templateDatabase(async (u) => void (token = await createToken(u)));
      return { url, token };
    })();
    const { url, token } = await pgTemplate;
    return { databaseUrl: await freshPostgresUrl(t, url), token };
  }
  template ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-template-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'template.db');
    return { file, token: await createToken(`sqlite:${file}`) };
  })();
  const { file: source, token } = await template;
  const file = join(tempDir(t), 'x.db');
  copyFileSync(source, file);
  return { databaseUrl: `sqlite:${file}`, token };
}

/** The last line of a command's output, which must end with a newline (where a command prints its secret). */
export function lastLine(stdout: string): string {
  assert.ok(stdout.endsWith('\n'), 'stdout does not end with a newline');
  return stdout.slice(0, -1).split('\n').at(-1)!;
}

/** What `plant-store token list --json` lists on `env`'s database; the command must exit 0. */
export async function listedTokens<T = Record<string, string | null>>(env: Record<string, string>): Promise<T[]> {
  const res = await runCli(['token', 'list', '--json'], env);
  assert.equal(res.code, 0, res.stderr);
  return JSON.parse(res.stdout) as T[];
}

export function portOf(url: string): number {
  return Number(new URL(url).port);
}
