// What Litestream needs to run against the replicas of REPLICA_URL: its binary, its configuration file and its
// environment. Used by serve (which supervises `litestream replicate`) and by the CLI (replica status, restore
// --from-replica), so both describe the same replicas by the same names.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { createOwnerOnlyFile } from '../kit/owner-only-files.js';
import type { Replica } from './replica-urls.js';

const require = createRequire(import.meta.url);

/**
 * The Litestream binary of this platform, from its npm package (@flydotio/litestream-<platform>-<arch>; Linux
 * x64's is an optional dependency, another platform's is installed beside plant-store). The packages' own
 * `litestream` command wraps it in spawnSync, which forwards no signal and loses the exit status, so the binary
 * is run directly.
 */
export function litestreamBinary(): string {
  const pkg = `@flydotio/litestream-${process.platform}-${process.arch}`;
  try {
    return require.resolve(`${pkg}/litestream`);
  } catch {
    throw new Error(`Litestream is not installed for ${process.platform}-${process.arch}: replication needs the npm package ${pkg} (npm install ${pkg}@1.0.1 beside plant-store).`);
  }
}

/**
 * What Litestream is given besides its file: no secret of plant-store (tokens, keys, the database URL), only
 * `base` (Config.litestreamEnv: finding its programs, its object stores' credentials) and the SFTP passwords.
 */
export function litestreamEnv(replicas: readonly Replica[], base: Readonly<Record<string, string>>): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { ...base };
  for (const r of replicas) if (r.password) out[r.password.env] = r.password.value;
  return out;
}

export interface LitestreamSettings {
  /** The SQLite store replicated (absolute). */
  database: string;
  replicas: readonly Replica[];
  syncIntervalMs: number;
}

/** Litestream's configuration: JSON log lines, the store and its replicas. */
export function litestreamConfig(s: LitestreamSettings): string {
  return stringify({
    logging: { type: 'json', level: 'info', stderr: true },
    dbs: [
      {
        path: s.database,
        replicas: s.replicas.map((r) => ({ ...r.config, 'sync-interval': `${s.syncIntervalMs}ms` })),
      },
    ],
  });
}

const CONFIG_FOLDER = 'plant-store-litestream-';

/**
 * The configuration written into a new owner-only folder (0700) as an owner-only file (0600), whatever the
 * umask; `remove` deletes both. The folder's name holds this process's pid: folders of processes that are gone
 * (killed with -9, so their `remove` never ran) are deleted first.
 */
export function writeLitestreamConfig(s: LitestreamSettings): { file: string; remove(): void } {
  removeOrphanedConfigs();
  const dir = mkdtempSync(join(tmpdir(), `${CONFIG_FOLDER}${process.pid}-`));
  const file = join(dir, `litestream-${randomBytes(6).toString('hex')}.yml`);
  createOwnerOnlyFile(file);
  writeFileSync(file, litestreamConfig(s));
  return { file, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

function removeOrphanedConfigs(): void {
  let names: string[];
  try {
    names = readdirSync(tmpdir());
  } catch {
    return;
  }
  for (const name of names) {
    const pid = new RegExp(`^${CONFIG_FOLDER}(\\d+)-`).exec(name)?.[1];
    if (pid === undefined || alive(Number(pid))) continue;
    rmSync(join(tmpdir(), name), { recursive: true, force: true });
  }
}

/** Whether a process with this pid exists (one of another user's counts: EPERM). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * argv for spawn: Litestream under umask 077, so that the folders it makes beside the store and in a file
 * replica are owner-only like the files (it gives files the store's own mode, 0600, but folders the umask's).
 */
function ownerOnlyCommand(binary: string, args: readonly string[]): [string, string[]] {
  return ['/bin/sh', ['-c', 'umask 077 && exec "$0" "$@"', binary, ...args]];
}

/**
 * argv for serve's Litestream, which runs in a process group of its own (spawn's `detached`), so that a signal
 * to serve's group (Ctrl-C) does not stop it before the store has closed: serve stops it afterwards. A watcher
 * beside it holds the stdin pipe from serve and sends it SIGTERM once the pipe closes, so it ends with serve
 * however serve ends (a kill -9 included), after sending what it has.
 */
export function supervisedCommand(binary: string, args: readonly string[]): [string, string[]] {
  const script = 'umask 077; exec 3<&0; (while read -r _; do :; done <&3; kill -TERM $$ 2>/dev/null) & exec "$0" "$@" </dev/null 3<&-';
  return ['/bin/sh', ['-c', script, binary, ...args]];
}

/** The settings a Litestream command reads (Config's). */
interface LitestreamConfig {
  replicaUrls: readonly Replica[];
  replicaSyncIntervalMs: number;
  litestreamEnv: Readonly<Record<string, string>>;
}

interface Run {
  code: number | null;
  stdout: string;
  /** Litestream's JSON log lines (its errors among them). */
  errors: string[];
}

/**
 * Runs a Litestream command (`args` given its configuration file) over the replicas of `config` for the store
 * `database`, to its end; never throws for what Litestream reports.
 */
export async function runLitestream(config: LitestreamConfig, database: string, args: (configFile: string) => string[]): Promise<Run> {
  const file = writeLitestreamConfig({ database, replicas: config.replicaUrls, syncIntervalMs: config.replicaSyncIntervalMs });
  try {
    const [command, argv] = ownerOnlyCommand(litestreamBinary(), args(file.file));
    const child = spawn(command, argv, { env: litestreamEnv(config.replicaUrls, config.litestreamEnv), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('close', (c) => resolve(c));
    });
    const errors = stderr
      .split('\n')
      .map(errorOf)
      .filter((e): e is string => e !== undefined);
    return { code, stdout, errors };
  } finally {
    file.remove();
  }
}

/** The error a Litestream log line reports, or undefined for one that reports none. */
function errorOf(line: string): string | undefined {
  if (line.trim() === '') return undefined;
  try {
    const entry = JSON.parse(line) as { level?: string; msg?: string; error?: string };
    if (entry.level !== 'ERROR') return undefined;
    return entry.error ?? entry.msg ?? line;
  } catch {
    return undefined;
  }
}
