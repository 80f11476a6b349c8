// Loaded into every process of a measured server by startup.mjs (NODE_OPTIONS=--import): in a cluster worker,
// the moment its HTTP server listens (what makes the primary hand it connections), appends one line to
// STARTUP_READY_FILE with the process's CPU time since it was forked (getrusage: every thread, user and
// system) and the wall time since. Nothing else changes in the service.
import cluster from 'node:cluster';
import { appendFileSync } from 'node:fs';
import { Server } from 'node:net';

const file = process.env.STARTUP_READY_FILE;
if (cluster.isWorker && file) {
  const listen = Server.prototype.listen;
  Server.prototype.listen = function (...args) {
    this.once('listening', () => {
      const { user, system } = process.cpuUsage();
      const line = { pid: process.pid, cpuMs: (user + system) / 1000, userMs: user / 1000, systemMs: system / 1000, wallMs: performance.now() };
      appendFileSync(file, `${JSON.stringify(line)}\n`);
    });
    return listen.apply(this, args);
  };
}
