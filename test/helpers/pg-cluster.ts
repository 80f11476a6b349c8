// A throwaway PostgreSQL cluster for tests and scripts: initdb into a fresh temp dir, pg_ctl start on a
// free loopback port, stop/start/kill to test outages, destroy to remove it. Uses only the server binaries.
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { freePort } from './ports.js';

export interface PgCluster {
  /** postgres://postgres:<password>@127.0.0.1:<port>/postgres (the superuser, the maintenance database). */
  url: string;
  port: number;
  /** The temp dir holding data/, the socket dir and the server log. */
  dir: string;
  dataDir: string;
  password: string;
  /** Fast shutdown (clients disconnected, checkpoint); start() brings it back on the same port. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Immediate shutdown: every server process quits without a checkpoint, as in a crash; start() recovers from WAL. */
  kill(): Promise<void>;
  /** Stops the server (immediately) and removes the temp dir. Safe to call twice. */
  destroy(): Promise<void>;
  /** The server log so far (for failure messages). */
  log(): string;
}

/** The directory holding initdb and pg_ctl: `pg_config --bindir`, else the newest /usr/lib/postgresql/N/bin. */
export function findPgBinDir(): string {
  try {
    const dir = execFileSync('pg_config', ['--bindir'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    if (existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'pg_ctl'))) return dir;
  } catch {
    // no pg_config on PATH: look where Debian puts the server
  }
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a)) : [];
  for (const v of versions) {
    const dir = join(root, v, 'bin');
    if (existsSync(join(dir, 'initdb'))) return dir;
  }
  throw new Error('PostgreSQL server binaries not found (no pg_config --bindir, no /usr/lib/postgresql/*/bin/initdb): apt-get install -y postgresql');
}

// initdb and the server refuse to run as root; Debian's postgresql package creates the postgres user.
const asRoot = process.getuid?.() === 0;

function run(bin: string, args: string[], timeoutMs = 60_000): Promise<string> {
  const [cmd, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
  return new Promise((resolve, reject) => {
    execFile(cmd, argv, { encoding: 'utf8', timeout: timeoutMs }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${bin} ${args.join(' ')} failed: ${err.message}\n${stdout}${stderr}`));
      else resolve(stdout);
    });
  });
}

// Clusters still running when the process exits (a crashed script, a failing test) are shut down.
const live = new Set<{ pgCtl: string; dataDir: string; dir: string }>();
process.once('exit', () => {
  for (const c of live) {
    const args = ['stop', '-D', c.dataDir, '-m', 'immediate', '-w'];
    if (asRoot) spawnSync('runuser', ['-u', 'postgres', '--', c.pgCtl, ...args], { stdio: 'ignore' });
    else spawnSync(c.pgCtl, args, { stdio: 'ignore' });
    rmSync(c.dir, { recursive: true, force: true });
  }
});

export interface PgClusterOptions {
  /** Extra server settings (`-c name=value`). */
  settings?: Record<string, string | number>;
}

/** Creates and starts a cluster. From node:test prefer pgCluster(t), which destroys it after the test. */
export async function startPgCluster(options: PgClusterOptions = {}): Promise<PgCluster> {
  const bin = findPgBinDir();
  const initdb = join(bin, 'initdb');
  const pgCtl = join(bin, 'pg_ctl');
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-pg-'));
  const dataDir = join(dir, 'data');
  const sockDir = dir;
  const logFile = join(dir, 'server.log');
  const password = randomBytes(12).toString('hex');
  const pwFile = join(dir, 'pwfile');
  writeFileSync(pwFile, `${password}\n`, { mode: 0o600 });
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(dir, uid, gid);
    chownSync(pwFile, uid, gid);
  }
  const entry = { pgCtl, dataDir, dir };
  live.add(entry);
  try {
    // Password auth over TCP (as in production, and so URLs carry a password to mask); trust on the socket.
    await run(initdb, ['-D', dataDir, '-U', 'postgres', `--pwfile=${pwFile}`, '--auth-host=scram-sha-256', '--auth-local=trust', '-E', 'UTF8', '--locale=C', '--no-instructions']);
  } catch (e) {
    live.delete(entry);
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  rmSync(pwFile, { force: true });

  let port = 0;
  const settings: Record<string, string | number> = {
    listen_addresses: '127.0.0.1',
    unix_socket_directories: sockDir,
    fsync: 'on',
    max_connections: 300,
    shared_buffers: '32MB',
    ...options.settings,
  };
  const startOnce = async () => {
    const opts = Object.entries({ ...settings, port })
      .map(([k, v]) => `-c ${k}=${v}`)
      .join(' ');
    await run(pgCtl, ['start', '-D', dataDir, '-l', logFile, '-w', '-t', '60', '-o', opts], 90_000);
  };
  const log = () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : '');

  // A port found free may be taken before the server binds it: try a few.
  for (let attempt = 0; ; attempt++) {
    port = await freePort();
    try {
      await startOnce();
      break;
    } catch (e) {
      if (attempt >= 4) {
        live.delete(entry);
        const text = log();
        rmSync(dir, { recursive: true, force: true });
        throw new Error(`${(e as Error).message}\n${text}`);
      }
    }
  }

  const ctlStop = async (mode: 'fast' | 'immediate') => {
    if (!existsSync(join(dataDir, 'postmaster.pid'))) return;
    await run(pgCtl, ['stop', '-D', dataDir, '-m', mode, '-w', '-t', '60'], 90_000);
  };
  let destroyed = false;
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    port,
    dir,
    dataDir,
    password,
    stop: () => ctlStop('fast'),
    start: startOnce,
    kill: () => ctlStop('immediate'),
    async destroy() {
      if (destroyed) return;
      destroyed = true;
      try {
        await ctlStop('immediate');
      } finally {
        live.delete(entry);
        rmSync(dir, { recursive: true, force: true });
      }
    },
    log,
  };
}

/** A cluster private to one test, destroyed after it. */
export async function pgCluster(t: TestContext, options?: PgClusterOptions): Promise<PgCluster> {
  const cluster = await startPgCluster(options);
  t.after(() => cluster.destroy());
  return cluster;
}
