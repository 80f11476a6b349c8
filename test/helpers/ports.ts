import type { ChildProcess } from 'node:child_process';
import { connect, createServer } from 'node:net';
import type { TestContext } from 'node:test';

/**
 * A loopback port nothing listens on right now: the kernel picks it, we release it. Another process could
 * take it before the caller binds it; on a test machine that race is rare enough to accept.
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/** Whether a connection to 127.0.0.1:`port` is refused (nothing listens there any more). */
export function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ECONNREFUSED'));
  });
}

/** Whether a process (or, negative, a process group) exists. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Kills a detached child's whole process group when the test ends (npm, its shell and the server). */
export function killGroupAfter(t: TestContext, proc: ChildProcess): void {
  t.after(() => {
    try {
      process.kill(-proc.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  });
}
