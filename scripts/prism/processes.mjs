// The processes of scripts/prism-run.mjs: the service, Prism and a webhook receiver, each stopped by cleanup()
// at the end, and one request over node:http.
import { spawn } from 'node:child_process';
import http from 'node:http';

export const cleanups = [];
export const cleanup = async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn().catch(() => {});
};

/** A loopback port nothing listens on now. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = http.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** Starts `cmd args` and resolves once its output matches `ready`; the process is stopped at the end. */
export async function startProcess(cmd, args, env, ready, what) {
  const proc = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout.on('data', (d) => (out += d));
  proc.stderr.on('data', (d) => (out += d));
  cleanups.push(
    () =>
      new Promise((resolve) => {
        if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
        proc.once('exit', () => resolve());
        proc.kill('SIGTERM');
        setTimeout(() => proc.kill('SIGKILL'), 5_000).unref();
      }),
  );
  const deadline = Date.now() + 60_000;
  while (!ready.test(out)) {
    if (proc.exitCode !== null) throw new Error(`${what} exited (${proc.exitCode}):\n${out}`);
    if (Date.now() > deadline) throw new Error(`${what} did not start:\n${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return { proc, output: () => out };
}

/** A receiver on 127.0.0.1 answering each subscription by its path: /ok 200, /busy 503, /gone 410. */
export async function startReceiver() {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead({ '/ok': 200, '/busy': 503, '/gone': 410 }[req.url] ?? 404).end());
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${server.address().port}`;
}

/** One request over node:http (which sends what fetch refuses: TRACE, Expect); never rejects. */
export function send(port, { method, path, headers = {}, body }) {
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, headers: { ...headers, ...(body !== undefined && { 'content-length': Buffer.byteLength(body) }) }, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text }));
      res.on('error', (e) => resolve({ status: 0, headers: {}, text: String(e) }));
    });
    req.on('error', (e) => resolve({ status: 0, headers: {}, text: String(e.code ?? e) }));
    req.end(body);
  });
}
