// A throwaway PostgreSQL server for the bench, made as test/helpers/pg-cluster.ts makes one (initdb into a temp
// dir, password auth over TCP on 127.0.0.1, fsync on), and pinned to the cores given (the load core by default:
// the service's core 0 runs only the service, as it would with the database on another host). Its CPU time is
// read from /proc for every server process, so a script can report it beside the service's.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LOAD_CORE, childPids, freePort } from './servers.mjs';

// On a machine given the pack of shared/tools/bench-pack (--pg), its on-target.sh names the binaries (PG_BIN),
// the user that runs them (PG_USER: PostgreSQL refuses root) and the libraries they need (PG_LIBS, for them only).
const { PG_BIN, PG_USER = 'postgres', PG_LIBS } = process.env;

function binDir() {
  if (PG_BIN) return PG_BIN;
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).filter((v) => /^\d+$/.test(v)).sort((a, b) => b - a) : [];
  for (const v of versions) if (existsSync(join(root, v, 'bin/initdb'))) return join(root, v, 'bin');
  throw new Error('PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin');
}

/** Whether a PostgreSQL server can be started here (its binaries are found). */
export function postgresAvailable() {
  try {
    return existsSync(join(binDir(), 'initdb'));
  } catch {
    return false;
  }
}

// initdb and the server refuse to run as root; Debian's postgresql package creates the postgres user.
const asRoot = process.getuid?.() === 0;
const run = (bin, args, cores) => {
  const argv = ['-c', cores, ...(asRoot ? ['runuser', '-u', PG_USER, '--'] : []), ...(PG_LIBS ? ['env', `LD_LIBRARY_PATH=${PG_LIBS}`] : []), bin, ...args];
  return execFileSync('taskset', argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 120_000 });
};

/** Starts a server; returns { url, cpuMs(), stop() }. `settings` adds `-c name=value` server settings. */
export async function startPostgres({ cores = LOAD_CORE, settings = {} } = {}) {
  const bin = binDir();
  const dir = mkdtempSync(join(tmpdir(), 'bench-pg-'));
  const dataDir = join(dir, 'data');
  const password = randomBytes(12).toString('hex');
  const pwFile = join(dir, 'pwfile');
  writeFileSync(pwFile, `${password}\n`, { mode: 0o600 });
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', PG_USER], { encoding: 'utf8' }));
    const gid = Number(execFileSync('id', ['-g', PG_USER], { encoding: 'utf8' }));
    chownSync(dir, uid, gid);
    chownSync(pwFile, uid, gid);
  }
  run(join(bin, 'initdb'), ['-D', dataDir, '-U', 'postgres', `--pwfile=${pwFile}`, '--auth-host=scram-sha-256', '--auth-local=trust', '-E', 'UTF8', '--locale=C', '--no-instructions'], cores);
  rmSync(pwFile, { force: true });
  const port = await freePort();
  const opts = Object.entries({ listen_addresses: '127.0.0.1', unix_socket_directories: dir, fsync: 'on', max_connections: 100, port, ...settings })
    .map(([k, v]) => `-c ${k}=${v}`).join(' ');
  run(join(bin, 'pg_ctl'), ['start', '-D', dataDir, '-l', join(dir, 'server.log'), '-w', '-t', '60', '-o', opts], cores);
  const postmaster = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  // Backends that exit take their CPU time with them; the pool keeps its connections through a run.
  const cpuMs = () => [postmaster, ...childPids(postmaster)].reduce((sum, pid) => {
    try {
      const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
      return sum + (Number(f[11]) + Number(f[12])) * 10;
    } catch {
      return sum;
    }
  }, 0);
  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    try {
      run(join(bin, 'pg_ctl'), ['stop', '-D', dataDir, '-m', 'immediate', '-w'], cores);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  process.once('exit', stop);
  return { url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`, cpuMs, stop };
}
