// The lean install and the production command of docs/deployment.md, done for real: `npm pack`, then
// `npm install --omit=dev <tarball>` into an empty folder (from the npm registry), `npx plant-store serve`
// answering /healthz; and the production command line, copied from the page, stopped with SIGTERM while a request
// is in flight: the request is answered, the exit code is 0 and nothing is left listening or running.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { killGroupAfter, refused } from '../helpers/ports.js';
import { eventually, within } from '../helpers/sleep.js';
import { readWhatWasSent } from '../helpers/raw-request.js';
import { badEnginePackages, npmOnNode20 } from './support.js';
import { cleanEnv, databaseWithToken, portOf } from '../helpers/cli.js';
import { listeningUrl } from '../helpers/app.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const PACKAGE = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string; devDependencies: Record<string, string> };

function npm(args: string[], cwd: string): string {
  // dist/ is already built by the test run; --ignore-scripts keeps `npm pack` from rebuilding it under other tests.
  const r = spawnSync('npm', args, { cwd, encoding: 'utf8', timeout: 240_000, env: { ...process.env, npm_config_update_notifier: 'false' } });
  assert.equal(r.status, 0, `npm ${args.join(' ')} failed:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

let installed: Promise<{ folder: string; warnings: string }> | undefined;

/**
 * An empty folder with the packed tarball installed by `npm install --omit=dev`, made once per test file, and
 * what npm warned. npm runs on Node.js 20, as where the service's own Node.js 24 comes only with the package.
 */
function installTarball(): Promise<{ folder: string; warnings: string }> {
  installed ??= (async () => {
    const work = mkdtempSync(join(tmpdir(), 'plant-store-pack-'));
    process.once('exit', () => rmSync(work, { recursive: true, force: true }));
    const tarball = npm(['pack', '--ignore-scripts', '--silent', '--pack-destination', work], ROOT).trim().split('\n').at(-1)!;
    const folder = join(work, 'install');
    spawnSync('mkdir', [folder]);
    const r = npmOnNode20(['install', '--omit=dev', '--no-audit', '--no-fund', join(work, tarball)], folder);
    assert.equal(r.status, 0, `npm install failed:\n${r.stdout}\n${r.stderr}`);
    return { folder, warnings: r.stderr };
  })();
  return installed;
}

function collect(proc: ChildProcess): () => string {
  let out = '';
  proc.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  return () => out;
}

/** Every package name an installed package lists in its own dependencies (top-level and scoped packages). */
function neededByInstalled(modules: string): Set<string> {
  const needed = new Set<string>();
  const read = (dir: string) => {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; dependencies?: Record<string, string> };
      if (pkg.name === 'plant-store') return;
      for (const name of Object.keys(pkg.dependencies ?? {})) needed.add(name);
    } catch {
      // not a package
    }
  };
  for (const entry of readdirSync(modules)) {
    if (entry.startsWith('.')) continue;
    if (entry.startsWith('@')) for (const sub of readdirSync(join(modules, entry))) read(join(modules, entry, sub));
    else read(join(modules, entry));
  }
  return needed;
}

/** Processes (other than ours) whose working directory is `dir`. */
function processesIn(dir: string): number[] {
  return readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .filter((p) => {
      try {
        return readlinkSync(`/proc/${p}/cwd`) === dir;
      } catch {
        return false;
      }
    })
    .map(Number);
}

test('npm pack, then npm install --omit=dev of the tarball in an empty folder: no development tool, a working npx plant-store serve', async (t) => {
  const { folder, warnings } = await installTarball();
  // npm warned exactly what docs/deployment.md prepares a reader for, and nothing else.
  const page = readFileSync(join(ROOT, 'docs/deployment.md'), 'utf8');
  const names = (item: RegExp) => [...(item.exec(page)?.[1] ?? '').matchAll(/`([^`]+)`/g)].map((m) => m[1]!).sort();
  assert.deepEqual(badEnginePackages(warnings), names(/^- `EBADENGINE` for ([^:]+):/m), warnings);
  const scripts = [...warnings.matchAll(/^npm warn install-scripts +(\S+)@[^@\s]+ \(/gm)].map((m) => m[1]!).sort();
  assert.deepEqual(scripts, names(/^- `install scripts not yet covered by allowScripts` for ([^:]+):/m), warnings);
  const other = warnings.split('\n').filter((l) => l.startsWith('npm warn') && !/^npm warn (EBADENGINE|install-scripts)\b/.test(l));
  assert.deepEqual(other, [], warnings);
  // A development dependency of ours is installed only where a production package needs it itself
  // (@types/node: @opentelemetry/instrumentation-pg depends on @types/pg, which depends on it).
  const needed = neededByInstalled(join(folder, 'node_modules'));
  for (const dev of Object.keys(PACKAGE.devDependencies)) {
    if (needed.has(dev)) continue;
    assert.equal(existsSync(join(folder, 'node_modules', dev)), false, `${dev}, a development dependency, was installed`);
  }
  assert.ok(existsSync(join(folder, 'node_modules/plant-store/dist/src/cli/main.js')), 'the tarball lacks dist/');
  assert.ok(existsSync(join(folder, 'node_modules/plant-store/openapi/plant-store.yaml')), 'the tarball lacks the document');

  const version = spawnSync('npx', ['plant-store', '--version'], { cwd: folder, encoding: 'utf8', env: cleanEnv() });
  assert.equal(version.stdout, `${PACKAGE.version}\n`, version.stderr);

  const proc = spawn('npx', ['plant-store', 'serve'], { cwd: folder, env: cleanEnv({ PORT: '0', BOOTSTRAP_TOKEN: 'false' }), detached: true });
  killGroupAfter(t, proc);
  const output = collect(proc);
  const port = portOf(await listeningUrl(proc, output, 30_000));
  const health = await fetch(`http://127.0.0.1:${port}/healthz`);
  assert.equal(health.status, 200);
  assert.deepEqual(await health.json(), { status: 'ok', version: PACKAGE.version });
  assert.equal((await fetch(`http://127.0.0.1:${port}/docs`)).status, 200, 'the docs page (its assets come from node_modules)');
  process.kill(-proc.pid!, 'SIGTERM');
});

test("docs/deployment.md's production command, run as written and sent SIGTERM mid-request: the request is answered, exit 0, nothing left", async (t) => {
  const page = readFileSync(join(ROOT, 'docs/deployment.md'), 'utf8');
  const command = /<!-- production-command -->\n```sh\n(.+)\n```/.exec(page)?.[1];
  assert.ok(command, 'docs/deployment.md has no production command block');
  const { folder } = await installTarball();
  const { databaseUrl, token } = await databaseWithToken(t);

  const proc = spawn('sh', ['-c', command], { cwd: folder, env: cleanEnv({ PORT: '0', DATABASE_URL: databaseUrl, BOOTSTRAP_TOKEN: 'false' }), detached: true });
  killGroupAfter(t, proc);
  const output = collect(proc);
  const exited = new Promise<number | string>((resolve) => proc.on('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  const port = portOf(await listeningUrl(proc, output, 30_000));
  // The process the supervisor started is the server itself (the shell exec'd it), so the signal reaches it.
  assert.match(readFileSync(`/proc/${proc.pid}/cmdline`, 'utf8'), /plant-store\.js\0serve/);

  const body = '{"id":9223372036854775806,"name":"in flight"}';
  const socket = connect(port, '127.0.0.1');
  let answer = '';
  socket.on('data', (d) => (answer += d.toString()));
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.write(
    `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`,
  );
  // The request is in flight (its head read) when the signal comes.
  await readWhatWasSent(port);
  proc.kill('SIGTERM');
  // The signal reached the server: it stopped listening to drain.
  await eventually(() => refused(port), 'the port closed after SIGTERM', 5_000);
  assert.equal(proc.exitCode, null, 'the server exited with a request in flight');
  socket.write(body.slice(10));

  const code = await within(exited, 15_000, 'still running 15 s after SIGTERM');
  assert.equal(code, 0, output());
  assert.match(answer, /^HTTP\/1\.1 200 /, answer);
  assert.match(answer, /"name":"in flight"/);
  assert.match(output(), /"msg":"stopped"/);
  assert.ok(await refused(port), 'something still listens on the port');
  assert.deepEqual(processesIn(folder), [], 'a process is left running in the install folder');
});
