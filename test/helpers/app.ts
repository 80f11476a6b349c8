// Test harness: a real service on 127.0.0.1 port 0 over a fresh database of the store under test
// (PLANT_STORE_TEST_STORE: sqlite, the default, or postgres), in this process (startApp) or as a child
// process running the real command (spawnServer). startApp builds the background services beside the app, as
// a single process does (src/process/background.ts), and takes what the webhook tests need too: a dispatcher with test
// settings that runs only when the test calls runOnce(), and a clock the test moves (test/helpers/clock.ts).
import assert from 'node:assert/strict';
import { spawn, type ChildProcess, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestContext } from 'node:test';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { buildApp } from '../../src/app.js';
import { createBackground } from '../../src/process/background.js';
import type { Sequencer } from '../../src/events/sequencer.js';
import { createObservers } from '../../src/observations/observations.js';
import type { Clock } from '../../src/kit/clock.js';
import { loadConfig, type Config } from '../../src/config.js';
import { createLogger } from '../../src/observations/logger.js';
import { createTokenService, type TokenService } from '../../src/auth/token-service.js';
import { openStore } from '../../src/storage/open-store.js';
import type { StoreOptions } from '../../src/storage/open-store.js';
import type { Store } from '../../src/storage/store.js';
import type { Dispatcher, DispatcherOptions } from '../../src/webhooks/dispatcher.js';
import { freshDatabaseUrl } from './test-store.js';
import { eventually } from './sleep.js';

export { TEST_STORE, freshDatabaseUrl } from './test-store.js';

export const BIN = fileURLToPath(new URL('../../../bin/plant-store.js', import.meta.url));

export function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-test-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export interface TestApp {
  url: string;
  port: number;
  app: FastifyInstance;
  store: Store;
  tokens: TokenService;
  /** The webhook dispatcher beside the app. */
  dispatcher: Dispatcher;
  /** The event sequencer beside the app: feed positions, deliveries and retention. */
  sequencer: Sequencer;
  databaseUrl: string;
  /** Secrets of tokens made for the test: both scopes, read only, write only. */
  token: { all: string; read: string; write: string };
  /** POST /plants with a JSON text body (a string is sent as is, anything else is JSON.stringify'd). */
  postPlant(body: unknown, headers?: Record<string, string>): Promise<Response>;
}

export interface StartOptions {
  config?: Partial<Config>;
  store?: StoreOptions;
  /** A database to use instead of a fresh one. */
  databaseUrl?: string;
  /** The app's clock: token expiry and caches, JWT claims, rate-limit windows, and the dispatcher's schedule. */
  clock?: Clock;
  /** Settings of the dispatcher over the service's own (the config's webhook timeout and allowed hosts, `clock`). */
  dispatcher?: Partial<Omit<DispatcherOptions, 'store'>>;
  /** false: the dispatcher runs only when the test calls `dispatcher.runOnce()`. Default true (in the background). */
  backgroundDispatcher?: boolean;
  /** Where the app logs (default: nowhere, logLevel silent). */
  logger?: Logger;
}

export async function startApp(t: TestContext, options: StartOptions = {}): Promise<TestApp> {
  // Registered before the database is made, so that it runs before the database is removed.
  let close = async () => {};
  t.after(() => close());
  const databaseUrl = options.databaseUrl ?? (await freshDatabaseUrl(t));
  // The app shares this process's event loop with the test, so loop lag here is the test's, not the
  // service's: no shedding on it unless a test asks (test/limits/load-shedding.test.ts).
  const config = loadConfig({}, { port: 0, logLevel: 'silent', databaseUrl, bootstrapToken: false, shedEventLoopDelayMs: 0, ...options.config });
  const { store } = await openStore(databaseUrl, options.store);
  close = () => store.close();
  const tokens = createTokenService(store, { cacheTtlMs: config.tokenCacheTtlMs, clock: options.clock });
  const observers = createObservers();
  const logger = createLogger(config);
  const background = createBackground({
    config,
    store,
    clock: options.clock,
    observers,
    tokens,
    dispatcher: options.dispatcher,
    startDispatcher: options.backgroundDispatcher ?? true,
  });
  const app = await buildApp(config, { store, logger: options.logger ?? logger, tokens, clock: options.clock, services: background.links, observers });
  close = async () => {
    await app.close();
    await background.stop();
    await store.close();
  };
  await app.listen({ port: 0, host: '127.0.0.1' });
  background.start();
  const port = (app.server.address() as { port: number }).port;
  const url = `http://127.0.0.1:${port}`;
  const make = async (scopes: ('plants:read' | 'plants:write')[]) => (await tokens.create({ name: scopes.join('+'), scopes })).secret;
  const token = { all: await make(['plants:read', 'plants:write']), read: await make(['plants:read']), write: await make(['plants:write']) };
  return {
    url,
    port,
    app,
    store,
    tokens,
    dispatcher: background.dispatcher,
    sequencer: background.sequencer,
    databaseUrl,
    token,
    postPlant(body, headers = {}) {
      return fetch(`${url}/plants`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token.write}`, 'content-type': 'application/json', ...headers },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
    },
  };
}

export interface ChildServer {
  url: string;
  proc: ChildProcessWithoutNullStreams;
  stdout: () => string;
  stderr: () => string;
  /** Resolves with the exit code (or the signal name) once the process is gone. */
  exited: Promise<number | string>;
}

/**
 * Runs `plant-store serve` for real and waits until it listens. `env` is added to this process's
 * environment unless `fullEnv` gives the whole environment; `cwd` sets the working directory; `node` is the
 * Node.js executable (default: this process's); `group` makes it the leader of a process group of its own,
 * which its workers join (signal it as a terminal or systemd does: `process.kill(-proc.pid, signal)`); `bin` is
 * the command's path (default: this checkout's bin/plant-store.js).
 */
export async function spawnServer(
  t: TestContext,
  env: Record<string, string>,
  options: { cwd?: string; fullEnv?: Record<string, string>; node?: string; group?: boolean; bin?: string } = {},
): Promise<ChildServer> {
  const proc = spawn(options.node ?? process.execPath, [options.bin ?? BIN, 'serve'], {
    cwd: options.cwd,
    env: options.fullEnv ?? { ...process.env, PORT: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: options.group ?? false,
  });
  let out = '';
  let err = '';
  proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | string>((resolve) => proc.on('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  t.after(() => {
    if (proc.exitCode === null && proc.signalCode === null) {
      if (options.group) process.kill(-proc.pid!, 'SIGKILL');
      else proc.kill('SIGKILL');
    }
  });
  try {
    return { url: await listeningUrl(proc, () => `${out}\n${err}`), proc, stdout: () => out, stderr: () => err, exited };
  } catch (e) {
    proc.kill('SIGKILL');
    throw e;
  }
}

/**
 * Waits for the server's start-up line ("Server listening at ...") in `output()` and returns its URL; fails
 * with the output when `proc` (the server, or npm running it) exits first or after `ms`.
 */
export async function listeningUrl(proc: ChildProcess, output: () => string, ms = 20_000): Promise<string> {
  return eventually(
    () => {
      const m = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output());
      if (m) return m[1]!;
      if (proc.exitCode !== null || proc.signalCode !== null) throw new Error(`the server exited before it listened (${proc.exitCode ?? proc.signalCode}):\n${output()}`);
      return undefined;
    },
    () => `the server listening:\n${output()}`,
    ms,
    25,
  );
}

/** A fresh database of the store under test, created and migrated as `plant-store migrate` leaves it. */
export async function migratedDatabaseUrl(t: TestContext, file?: string): Promise<string> {
  const url = await freshDatabaseUrl(t, file);
  const { store } = await openStore(url);
  await store.close();
  return url;
}

/** Runs the CLI to completion, with `input` on its stdin when given. */
export function runCli(args: string[], env: Record<string, string>, input?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const proc = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env }, stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    proc.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    // 'close', not 'exit': output still in the pipes when the process exits would be lost.
    proc.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
    if (input !== undefined) proc.stdin!.end(input);
  });
}

/** Asserts the contract's Error shape and returns it. */
export async function errorOf(res: Response): Promise<{ error: number; message: string }> {
  const type = res.headers.get('content-type') ?? '';
  if (!type.startsWith('application/json')) throw new Error(`expected JSON error, got ${type}: ${await res.text()}`);
  const body = (await res.json()) as { error: number; message: string };
  if (body.error !== res.status) throw new Error(`error field ${body.error} != status ${res.status}`);
  if (typeof body.message !== 'string' || body.message.length === 0) throw new Error('empty message');
  if (Object.keys(body).sort().join() !== 'error,message') throw new Error(`extra fields: ${JSON.stringify(body)}`);
  return body;
}

/** The id in a Location header `/plants/{id}`, as digits. */
export function locationId(res: Response): string {
  const location = res.headers.get('location') ?? '';
  const m = /^\/plants\/(-?\d+)$/.exec(location);
  assert.ok(m, `Location /plants/{id}, got ${JSON.stringify(location)}`);
  return m[1]!;
}
