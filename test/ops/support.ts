// Shared helpers for the storage, operations and docs tests: the real command with a chosen working
// directory, token creation through the CLI, and a small HTTP load generator over test/helpers/raw-request.ts
// so that every outcome (status, or the socket error code) is visible.
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestContext } from 'node:test';
import { BIN, runCli, spawnServer, tempDir, type ChildServer } from '../helpers/app.js';
import { plantJson, postRaw } from '../helpers/raw-request.js';
import { freshPostgresUrl, templateDatabase, TEST_STORE } from '../helpers/test-store.js';
import { sleep } from '../helpers/sleep.js';
import { storedPlant } from '../helpers/stored-plant.js';
import { openStore } from '../../src/storage/open-store.js';

export interface Env {
  [name: string]: string | undefined;
}

/** The environment of the test process minus every variable plant-store reads, so defaults are really defaults. */
export function cleanEnv(extra: Env = {}): Record<string, string> {
  const out: Record<string, string> = {};
  const ours = /^(PORT|HOST|DATABASE_[A-Z_]+|LOG_LEVEL|BODY_LIMIT_BYTES|REQUEST_TIMEOUT_MS|HEADERS_TIMEOUT_MS|KEEP_ALIVE_TIMEOUT_MS|SHUTDOWN_TIMEOUT_MS|TOKEN_CACHE_TTL_MS|AUTH_FAILURES_PER_MINUTE|BOOTSTRAP_TOKEN|WEBHOOK_[A-Z_]+|CORS_ORIGINS|RATE_LIMIT(_[A-Z_]+)?|TRUST_PROXY|SHED_[A-Z_]+|JWT_[A-Z0-9_]+)$/;
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

export function portOf(url: string): number {
  return Number(new URL(url).port);
}

export interface LoadResult {
  /** Ids answered 200, with the time (ms since load start) the answer arrived. */
  ok: Map<bigint, number>;
  /** Non-200 responses, by status, with one sample body each. */
  statuses: Map<number, { count: number; sample: string; at: number[] }>;
  /** Requests that ended without a response, by socket error code, with the ids (their fate is unknown). */
  errors: Map<string, { ids: bigint[]; at: number[] }>;
  sent: number;
}

/**
 * `clients` concurrent clients, each posting fresh unique ids back to back over keep-alive connections
 * until `until()` says stop or (after `stopOnErrorAfter()` is true) a request fails without a response.
 */
export async function runLoad(options: {
  port: number;
  token: string;
  clients: number;
  firstId: bigint;
  until: () => boolean;
  /** Once true, a client stops at its first failed exchange (the server is gone). */
  stopOnError?: () => boolean;
  startedAt?: number;
  /** Filled while the load runs, so a test can watch progress (e.g. wait for enough 200s). */
  result?: LoadResult;
}): Promise<LoadResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.clients });
  const result: LoadResult = options.result ?? { ok: new Map(), statuses: new Map(), errors: new Map(), sent: 0 };
  const t0 = options.startedAt ?? Date.now();
  let next = options.firstId;
  const client = async () => {
    while (!options.until()) {
      const id = next++;
      result.sent++;
      const out = await postRaw(options.port, options.token, plantJson(id, `plant-${id}`), { agent });
      const at = Date.now() - t0;
      if (out.kind === 'response' && out.status === 200) {
        result.ok.set(id, at);
      } else if (out.kind === 'response') {
        const s = result.statuses.get(out.status) ?? { count: 0, sample: out.body, at: [] };
        s.count++;
        s.at.push(at);
        result.statuses.set(out.status, s);
      } else {
        const e = result.errors.get(out.code) ?? { ids: [], at: [] };
        e.ids.push(id);
        e.at.push(at);
        result.errors.set(out.code, e);
        if (options.stopOnError?.()) return;
        await sleep(5);
      }
    }
  };
  await Promise.all(Array.from({ length: options.clients }, client));
  agent.destroy();
  return result;
}

export function summarize(r: LoadResult): string {
  const statuses = [...r.statuses].map(([s, v]) => `${s}x${v.count}`).join(' ');
  const errors = [...r.errors].map(([c, v]) => `${c}x${v.ids.length}`).join(' ');
  return `sent=${r.sent} ok=${r.ok.size} other=[${statuses}] errors=[${errors}]`;
}

/**
 * After a load that ended in a kill or a drain: every plant answered 200 is stored as sent, and nothing else is
 * there but some of those whose connection was cut (their fate unknown). Returns a line for t.diagnostic.
 */
export async function assertAcknowledgedStored(databaseUrl: string, result: LoadResult): Promise<string> {
  const inDoubt = [...result.errors.values()].flatMap((e) => e.ids);
  const { store } = await openStore(databaseUrl);
  try {
    const missing: bigint[] = [];
    for (const id of result.ok.keys()) {
      const plant = await storedPlant(store, id);
      if (!plant) missing.push(id);
      else assert.deepEqual(plant, { id, name: `plant-${id}` });
    }
    assert.deepEqual(missing, [], `${missing.length} acknowledged plants lost`);
    let storedInDoubt = 0;
    for (const id of inDoubt) if (await storedPlant(store, id)) storedInDoubt++;
    const count = await store.countPlants();
    // Only ids some client sent can be there: the acknowledged ones plus some of those cut off mid-answer.
    assert.equal(count, result.ok.size + storedInDoubt, 'a plant no client was answered for, beyond those cut off');
    assert.ok(count <= result.ok.size + inDoubt.length);
    return `acknowledged=${result.ok.size} all stored; cut off=${inDoubt.length}, of which stored=${storedInDoubt}`;
  } finally {
    await store.close();
  }
}

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
