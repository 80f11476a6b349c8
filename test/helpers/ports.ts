import { createServer } from 'node:net';

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
