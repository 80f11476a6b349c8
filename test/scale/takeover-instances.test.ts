// A rolling upgrade by takeover of N instances behind HAProxy, with no drain by hand: three `plant-store serve`
// instances on one PostgreSQL database behind HAProxy configured as docs/deployment.md gives it (the block is
// read from the document; only its bind and server lines are made local), and each instance in turn upgraded by
// starting a new `serve` with the same settings on its port. No HAProxy admin command is used. Under writers,
// readers, resuming event stream readers and a webhook receiver, all through HAProxy: no request fails (no 5xx,
// 429, reset or refused connection), every acknowledged write is stored, no event is missed or repeated, every
// event is delivered once; every old instance exits 0 and its successor says it took over.
// PostgreSQL only (scripts/engine-only.mjs); needs haproxy (npm test installs it as root: scripts/preflight.mjs).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnServer, tempDir, type ChildServer } from '../helpers/app.js';
import { databaseWithToken } from '../helpers/cli.js';
import { assertAcknowledgedStored } from '../helpers/load.js';
import { freePort } from '../helpers/ports.js';
import { eventually, within } from '../helpers/sleep.js';
import { assertNothingFailedOrLost, startUsers, subscribedReceiver } from '../ops/takeover-support.js';
import { haproxyAvailable } from './haproxy.js';

const DEPLOYMENT_MD = new URL('../../../docs/deployment.md', import.meta.url);
const TOOK_OVER = '"msg":"took over: the previous server handed over and stopped"';
const INSTANCES = 3;

/**
 * docs/deployment.md's HAProxy configuration for the instances, as it stands there: only the frontend's bind
 * (`:80`) becomes a loopback port and the example servers (`server appN 10.0.0.1N:8080 check`) become ours.
 */
function documentedHaproxyConfig(listenPort: number, backends: number[]): string {
  const doc = readFileSync(DEPLOYMENT_MD, 'utf8');
  // The document's fenced blocks (an opening fence may name a language; the closing one is bare).
  const blocks: string[][] = [];
  let open: string[] | undefined;
  for (const line of doc.split('\n')) {
    if (open === undefined && /^```\w*$/.test(line)) blocks.push((open = []));
    else if (open !== undefined && line === '```') open = undefined;
    else open?.push(line);
  }
  const block = blocks.map((b) => b.join('\n')).find((b) => /^backend plant_store$/m.test(b));
  assert.ok(block, 'docs/deployment.md shows an HAProxy configuration with `backend plant_store`');
  const lines = block.split('\n');
  const bind = lines.findIndex((l) => /^\s*bind :80\s*$/.test(l));
  assert.ok(bind >= 0, 'the documented frontend binds :80');
  lines[bind] = `  bind 127.0.0.1:${listenPort}`;
  const SERVER = /^(\s*server app\d+ )(\S+)( .*\bcheck\b.*)$/;
  const servers = lines.flatMap((l, i) => (SERVER.test(l) ? [i] : []));
  assert.equal(servers.length, INSTANCES, 'the documented backend lists three checked servers `server appN ADDRESS check`');
  // Each documented server line as it is, its address made one of ours.
  const ours = backends.map((port, i) => lines[servers[i]!]!.replace(SERVER, `$1127.0.0.1:${port}$3`));
  lines.splice(servers[0]!, servers.length, ...ours);
  // HAProxy wants the last line ended.
  return `${lines.join('\n')}\n`;
}

/** HAProxy in the foreground on the documented configuration; stopped after the test. */
async function startHaproxy(t: TestContext, backends: number[]): Promise<{ port: number; output: () => string }> {
  const dir = tempDir(t);
  const file = join(dir, 'haproxy.cfg');
  let out = '';
  // A port found free may be taken before HAProxy binds it: try a few.
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort();
    writeFileSync(file, documentedHaproxyConfig(port, backends));
    const proc = spawn('haproxy', ['-db', '-f', file], { stdio: ['ignore', 'pipe', 'pipe'] });
    proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (out += d.toString()));
    t.after(() => void (proc.exitCode === null && proc.signalCode === null && proc.kill('SIGKILL')));
    const up = await eventually(
      async () => {
        if (proc.exitCode !== null) return 'exited';
        const res = await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined);
        return res?.status === 200 && 'up';
      },
      () => `haproxy answering /readyz:\n${out}`,
      10_000,
      50,
    );
    if (up === 'up') return { port, output: () => out };
  }
  throw new Error(`haproxy did not start:\n${out}`);
}

test('three instances behind HAProxy as documented, each upgraded in turn by takeover under load: nothing fails or is lost', { timeout: 120_000 }, async (t) => {
  assert.ok(haproxyAvailable(), 'haproxy is not installed (apt-get install -y haproxy)');
  const started = Date.now();
  const { databaseUrl, token } = await databaseWithToken(t);
  const rx = await subscribedReceiver(t, databaseUrl);
  const runtime = tempDir(t);
  const ports = await Promise.all(Array.from({ length: INSTANCES }, () => freePort()));
  // The environment docs/deployment.md gives every instance, one process each; the control socket's name
  // includes the port, so the instances share one RUNTIME_DIRECTORY.
  const envOf = (port: number) => ({
    DATABASE_URL: databaseUrl,
    HOST: '127.0.0.1',
    PORT: String(port),
    WORKERS: '1',
    BOOTSTRAP_TOKEN: 'false',
    TRUST_PROXY: '127.0.0.1',
    WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
    RUNTIME_DIRECTORY: runtime,
  });
  const instances: ChildServer[] = await Promise.all(ports.map((port) => spawnServer(t, envOf(port))));
  const lb = await startHaproxy(t, ports);
  const url = `http://127.0.0.1:${lb.port}`;
  t.diagnostic(`deployed in ${Date.now() - started} ms`);

  const users = startUsers({ port: lb.port, token, writers: 6, streamReaders: 2, pauseMs: 20, firstId: 1n });
  const moreWrites = async (n: number, what: string) => {
    const from = users.writes.ok.size;
    await eventually(() => users.writes.ok.size >= from + n, `${n} writes acknowledged ${what}`, 30_000, 20);
  };
  await moreWrites(60, 'before the first takeover');
  for (const [i, port] of ports.entries()) {
    const old = instances[i]!;
    const from = Date.now();
    const next = await spawnServer(t, envOf(port));
    const code = await within(old.exited, 30_000, 'still running');
    assert.equal(code, 0, `instance ${i + 1}'s old server exits 0:\n${old.stdout()}\n${old.stderr()}`);
    await eventually(() => next.stdout().includes(TOOK_OVER), `instance ${i + 1}'s new server saying it took over`, 10_000);
    assert.ok(old.stdout().includes('"msg":"handed over"'), `instance ${i + 1}'s old server says it handed over`);
    assert.ok(!old.stdout().includes('SHUTTING_DOWN'), `instance ${i + 1}'s old server refused no request`);
    t.diagnostic(`instance ${i + 1}: start of the new server to the old one's exit ${Date.now() - from} ms`);
    instances[i] = next;
    await moreWrites(60, `after instance ${i + 1}'s takeover`);
  }
  await users.stop(url);
  t.diagnostic(await assertNothingFailedOrLost(users, url, token, rx));
  t.diagnostic(await assertAcknowledgedStored(databaseUrl, users.writes));
  // Every stream reader was moved at least once (the instance serving its stream handed over) and resumed.
  for (const stream of users.streams) assert.ok(stream.streams >= 2, `a stream reader opened ${stream.streams} streams`);
  assert.doesNotMatch(lb.output(), /\[(ALERT|WARNING)\]/, `haproxy warned:\n${lb.output()}`);
  t.diagnostic(`whole test ${Date.now() - started} ms`);
});
