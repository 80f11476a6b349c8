// A throwaway SFTP server for replication tests: Debian's OpenSSH sshd on a free loopback port, in the
// foreground, with its own host key, one client key, internal-sftp under umask 077 (as docs/backup.md advises
// for a replica host), no password logins. stop() makes it unreachable (connections refused) and start()
// brings it back on the same port.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync, copyFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { freePort, refused } from './ports.js';
import { eventually } from './sleep.js';

export const SSHD = '/usr/sbin/sshd';

export interface SftpServer {
  port: number;
  /** The user to log in as (the one running the tests: sshd logs in only as an existing user). */
  user: string;
  /** The private key the client logs in with. */
  keyPath: string;
  /** A folder for replicas, owned by the user. */
  root: string;
  stop(): Promise<void>;
  start(): Promise<void>;
}

export function sftpAvailable(): boolean {
  return existsSync(SSHD);
}

export async function startSftpServer(t: TestContext): Promise<SftpServer> {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-sftp-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  for (const name of ['host_key', 'client_key']) {
    const r = spawnSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(dir, name)], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`ssh-keygen failed: ${r.stderr}`);
  }
  copyFileSync(join(dir, 'client_key.pub'), join(dir, 'authorized_keys'));
  const root = join(dir, 'replicas');
  mkdirSync(root, { mode: 0o700 });
  // sshd's privilege separation needs this folder (made by the package's service script, which is not run here).
  mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });
  const port = await freePort();
  const config = join(dir, 'sshd_config');
  writeFileSync(
    config,
    [
      'ListenAddress 127.0.0.1',
      `Port ${port}`,
      `HostKey ${join(dir, 'host_key')}`,
      `AuthorizedKeysFile ${join(dir, 'authorized_keys')}`,
      `PidFile ${join(dir, 'sshd.pid')}`,
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'PermitRootLogin prohibit-password',
      'StrictModes no',
      'UsePAM no',
      'Subsystem sftp internal-sftp -u 077',
      '',
    ].join('\n'),
  );
  let proc: ChildProcess | undefined;
  let output = '';
  const start = async () => {
    proc = spawn(SSHD, ['-D', '-e', '-f', config], { stdio: ['ignore', 'pipe', 'pipe'] });
    proc.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    await eventually(() => output.includes('Server listening'), () => `sshd listening (it said: ${output})`, 10_000, 20);
  };
  const stop = async () => {
    const p = proc;
    proc = undefined;
    if (!p || p.exitCode !== null) return;
    const exited = new Promise((resolve) => p.once('exit', resolve));
    // The sessions open now too (the listener's descendants): a client connected before must lose its link, with
    // its connection reset rather than left open with nobody behind it.
    for (const pid of descendants(p.pid!)) spawnSync('kill', ['-KILL', String(pid)]);
    p.kill('SIGTERM');
    await exited;
    await eventually(() => refused(port), 'sshd refusing connections', 5_000, 20);
  };
  t.after(stop);
  await start();
  return { port, user: userInfo().username, keyPath: join(dir, 'client_key'), root, stop, start: () => ((output = ''), start()) };
}

/** Every process below `pid`, children first found first. */
function descendants(pid: number): number[] {
  const children = spawnSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' })
    .stdout.split('\n')
    .filter(Boolean)
    .map(Number);
  return children.flatMap((c) => [c, ...descendants(c)]);
}
