// A throwaway PostgreSQL cluster for tests and scripts: initdb into a fresh temp dir, pg_ctl start on a
// free loopback port, stop/start/kill/crash to test outages, destroy to remove it; and a streaming standby of
// one (pg_basebackup -R), synchronous if asked, that promote() makes a primary. Uses only the server binaries.
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { alive, freePort } from './ports.js';
import { eventually } from './sleep.js';

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
  /**
   * kill -9 of every server process at once (the postmaster's process group), as when its machine is lost:
   * nothing is told, no backend answers again. Resolves once they are gone.
   */
  crash(): Promise<void>;
  /** A standby ends recovery and becomes a primary (pg_ctl promote); resolves once it accepts writes. */
  promote(): Promise<void>;
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

const SERVER_SETTINGS = {
  listen_addresses: '127.0.0.1',
  fsync: 'on',
  max_connections: 300,
  shared_buffers: '32MB',
};

/** A fresh temp dir the server's user owns. */
function newDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-pg-'));
  if (asRoot) chownSync(dir, postgresUid(), postgresGid());
  return dir;
}

const postgresUid = () => Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
const postgresGid = () => Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());

/** Creates and starts a cluster. From node:test prefer pgCluster(t), which destroys it after the test. */
export async function startPgCluster(options: PgClusterOptions = {}): Promise<PgCluster> {
  const bin = findPgBinDir();
  const dir = newDir();
  const dataDir = join(dir, 'data');
  const password = randomBytes(12).toString('hex');
  const pwFile = join(dir, 'pwfile');
  writeFileSync(pwFile, `${password}\n`, { mode: 0o600 });
  if (asRoot) chownSync(pwFile, postgresUid(), postgresGid());
  const entry = { pgCtl: join(bin, 'pg_ctl'), dataDir, dir };
  live.add(entry);
  try {
    // Password auth over TCP (as in production, and so URLs carry a password to mask); trust on the socket.
    await run(join(bin, 'initdb'), ['-D', dataDir, '-U', 'postgres', `--pwfile=${pwFile}`, '--auth-host=scram-sha-256', '--auth-local=trust', '-E', 'UTF8', '--locale=C', '--no-instructions']);
  } catch (e) {
    live.delete(entry);
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  rmSync(pwFile, { force: true });
  return serve(entry, password, options);
}

export interface PgStandbyOptions extends PgClusterOptions {
  /** The standby's application_name on the primary, which synchronous_standby_names names. */
  name?: string;
  /** The primary waits for this standby at every commit: synchronous_standby_names set to its name (and reloaded). */
  synchronous?: boolean;
}

/**
 * A hot standby streaming from `primary`, made as an operator makes one: pg_basebackup -R (which writes
 * standby.signal and primary_conninfo), here over the primary's socket. With `synchronous`, resolves once the
 * primary reports it as its synchronous standby, so every commit acknowledged from then on is on both.
 */
export async function startPgStandby(primary: PgCluster, options: PgStandbyOptions = {}): Promise<PgCluster> {
  const bin = findPgBinDir();
  const name = options.name ?? 'standby1';
  const dir = newDir();
  const dataDir = join(dir, 'data');
  const entry = { pgCtl: join(bin, 'pg_ctl'), dataDir, dir };
  live.add(entry);
  const psql = (sql: string) => run(join(bin, 'psql'), ['-h', primary.dir, '-p', String(primary.port), '-U', 'postgres', '-d', 'postgres', '-XAtc', sql]);
  try {
    const source = `host=${primary.dir} port=${primary.port} user=postgres application_name=${name}`;
    await run(join(bin, 'pg_basebackup'), ['-D', dataDir, '-R', '-X', 'stream', '-c', 'fast', '-d', source], 120_000);
  } catch (e) {
    live.delete(entry);
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  // The standby's own settings (its port, socket): those of the primary's command line are not copied.
  const standby = await serve(entry, primary.password, options);
  if (options.synchronous) {
    await psql(`ALTER SYSTEM SET synchronous_standby_names = '"${name}"'`);
    await psql('SELECT pg_reload_conf()');
    let state = '';
    await eventually(
      async () => (state = (await psql(`SELECT sync_state FROM pg_stat_replication WHERE application_name = '${name}'`)).trim()) === 'sync',
      () => `standby ${name} synchronous (pg_stat_replication says '${state}')\n${standby.log()}`,
      30_000,
      100,
    );
  }
  return standby;
}

/** Starts the server of `entry`'s data dir on a free loopback port; the handle the tests use. */
async function serve(entry: { pgCtl: string; dataDir: string; dir: string }, password: string, options: PgClusterOptions): Promise<PgCluster> {
  const { pgCtl, dataDir, dir } = entry;
  const logFile = join(dir, 'server.log');
  let port = 0;
  const settings: Record<string, string | number> = { ...SERVER_SETTINGS, unix_socket_directories: dir, ...options.settings };
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

  /** The postmaster's pid while it runs (a crash leaves postmaster.pid behind, naming a process gone). */
  const postmaster = (): number | undefined => {
    const file = join(dataDir, 'postmaster.pid');
    if (!existsSync(file)) return undefined;
    const pid = Number(readFileSync(file, 'utf8').split('\n')[0]);
    return pid > 0 && alive(pid) ? pid : undefined;
  };
  const ctlStop = async (mode: 'fast' | 'immediate') => {
    if (postmaster() === undefined) return;
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
    async crash() {
      const pid = postmaster();
      if (pid === undefined) return;
      // pg_ctl starts the postmaster in a session of its own: its process group is the server, backends included.
      process.kill(-pid, 'SIGKILL');
      await eventually(() => !alive(-pid), `the processes of PostgreSQL ${pid} gone`, 10_000, 20);
    },
    promote: async () => void (await run(pgCtl, ['promote', '-D', dataDir, '-w', '-t', '60'], 90_000)),
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

/** A standby of `primary` private to one test, destroyed after it. */
export async function pgStandby(t: TestContext, primary: PgCluster, options?: PgStandbyOptions): Promise<PgCluster> {
  const standby = await startPgStandby(primary, options);
  t.after(() => standby.destroy());
  return standby;
}
