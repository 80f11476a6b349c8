// npm test's preflight, before anything is built: the Debian packages the chosen tests need, looked for where
// the tests look for them. Missing ones are installed with apt-get when running as root; otherwise (or when
// that fails) the run stops at once with one line naming the packages and the command that installs them.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { wrongStore } from './engine-only.mjs';

function onPath(command, env) {
  return (env.PATH ?? '').split(delimiter).some((dir) => dir !== '' && existsSync(join(dir, command)));
}

// As test/helpers/pg-cluster.ts finds initdb: `pg_config --bindir`, else Debian's /usr/lib/postgresql/N/bin.
function postgresFound(root, env) {
  if (onPath('pg_config', env)) {
    try {
      const dir = execFileSync('pg_config', ['--bindir'], { encoding: 'utf8', env, stdio: ['ignore', 'pipe', 'ignore'] }).trim();
      if (existsSync(join(dir, 'initdb'))) return true;
    } catch {
      // a broken pg_config: look where Debian puts the server
    }
  }
  const versions = join(root, 'usr/lib/postgresql');
  return existsSync(versions) && readdirSync(versions).some((v) => existsSync(join(versions, v, 'bin/initdb')));
}

/**
 * The Debian packages the suite uses, and which runs need them: a store (`stores`) or test files (`files`,
 * paths or folder prefixes under dist/test/, as scripts/test.mjs names them).
 */
export const SYSTEM_PACKAGES = [
  {
    name: 'chromium',
    // Driven by playwright-core at this path; no browser is ever downloaded.
    files: ['dist/test/docs/docs-browser.test.js', 'dist/test/client/client-package.test.js', 'dist/test/events/browser-stream.test.js', 'dist/test/console/console-browser.test.js'],
    found: (root) => existsSync(join(root, 'usr/bin/chromium')),
  },
  { name: 'postgresql', stores: ['postgres'], found: postgresFound },
  { name: 'haproxy', files: ['dist/test/scale/'], found: (root, env) => onPath('haproxy', env) },
  // The SFTP server a remote Litestream replica is sent to (test/helpers/sftp-server.ts).
  { name: 'openssh-server', files: ['dist/test/ops/replication.test.js'], found: (root) => existsSync(join(root, 'usr/sbin/sshd')) },
];

/**
 * The packages missing for running `files` on each of `stores`. `root` is where the packages' files are
 * looked for ('/'; PLANT_STORE_TEST_SYSTEM_ROOT moves it, for the tests of this script) and `env.PATH` where
 * their commands are.
 */
export function missingPackages(stores, files, root = process.env.PLANT_STORE_TEST_SYSTEM_ROOT || '/', env = process.env) {
  const runs = stores.flatMap((store) => files.filter((f) => !wrongStore(f, store)).map((f) => ({ store, file: f })));
  const needed = SYSTEM_PACKAGES.filter(
    (p) => stores.some((s) => p.stores?.includes(s)) || runs.some((r) => p.files?.some((prefix) => r.file.startsWith(prefix))),
  );
  return needed.filter((p) => !p.found(root, env)).map((p) => p.name);
}

/** Returns when every package the run needs is there (installing what is missing where it can), else exits 1. */
export function ensureSystemPackages(stores, files) {
  let missing = missingPackages(stores, files);
  if (missing.length === 0) return;
  let command = `apt-get update && apt-get install -y ${missing.join(' ')}`;
  let reason;
  if (process.getuid?.() !== 0) reason = 'not running as root, which would install them';
  else if (!onPath('apt-get', process.env)) reason = 'no apt-get on PATH';
  else {
    console.log(`# the tests need ${missing.join(', ')}: ${command}`);
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    const update = spawnSync('apt-get', ['update'], { stdio: 'inherit', env });
    const install = update.status === 0 ? spawnSync('apt-get', ['install', '-y', ...missing], { stdio: 'inherit', env }) : update;
    if (install.status !== 0) reason = `apt-get failed with exit ${install.status}`;
    else {
      missing = missingPackages(stores, files);
      if (missing.length === 0) return;
      reason = 'still missing after apt-get install';
      command = `apt-get update && apt-get install -y ${missing.join(' ')}`;
    }
  }
  const sqliteOnly = missing.includes('postgresql') ? '; or PLANT_STORE_TEST_STORES=sqlite to leave PostgreSQL out' : '';
  console.error(`npm test needs system packages that are missing: ${missing.join(', ')} (${reason}). As root: ${command}${sqliteOnly}`);
  process.exit(1);
}

/**
 * The takeover tests need what docs/operations.md asks of a machine that upgrades by takeover: Linux moving the
 * connections waiting in a closing SO_REUSEPORT socket's queue to another socket of its group
 * (net.ipv4.tcp_migrate_req=1, Linux 5.14 and later), without which a connection arriving as the old server stops
 * listening may be reset. Set here when running as root; otherwise said once, and those tests fail saying so.
 */
export function ensureConnectionMigration(files) {
  const setting = '/proc/sys/net/ipv4/tcp_migrate_req';
  if (!files.some((f) => f.includes('takeover')) || !existsSync(setting) || readFileSync(setting, 'utf8').trim() === '1') return;
  if (process.getuid?.() === 0) {
    writeFileSync(setting, '1\n');
    console.error('preflight: set net.ipv4.tcp_migrate_req=1 for the takeover tests (docs/operations.md)');
  } else console.error('preflight: net.ipv4.tcp_migrate_req is 0; the takeover tests need it at 1 (as root: sysctl -w net.ipv4.tcp_migrate_req=1)');
}
