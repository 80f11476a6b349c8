// The previous release of plant-store, found in this clone's git history and built in a temporary folder, for
// test/ops/previous-release.test.ts (the previous release keeps working on the new schema). What "the previous
// release" means is written at the top of that test.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestContext } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { spawnServer, type ChildServer } from './app.js';
import { cleanEnv } from './cli.js';
import { ResponseValidator } from './response-validator.js';

/** The repository root (dist/test/helpers/ is three folders below it). */
export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** The files that hold the schema history: the versions and their DDL, and each engine's terms for it. */
export const SCHEMA_FILES = ['src/storage/schema-history.ts', 'src/storage/sqlite/migrations.ts', 'src/storage/postgres/migrations.ts'];

export interface PreviousRelease {
  /** The commit the previous release is built from. */
  commit: string;
  /** Why it is the previous release: the schema change after it (a commit, or the working tree's edits). */
  why: string;
  /** Commits that touched the schema files, newer than the one that changed the schema, in comments or layout only. */
  notChanges: string[];
}

function git(args: string[]): { ok: boolean; out: string; err: string } {
  const r = spawnSync('git', args, { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (r.error) return { ok: false, out: '', err: r.error.message };
  return { ok: r.status === 0, out: r.stdout, err: r.stderr.trim() };
}

/**
 * The schema files' text at `rev` (or in the working tree when `rev` is undefined) without what cannot change a
 * schema: comments (whole-line `//` comments and `/* ... *\/` blocks), indentation and blank lines. A file
 * missing at `rev` counts as empty. Two revisions with the same text have the same migration lists.
 */
function schemaText(rev: string | undefined): string {
  return SCHEMA_FILES.map((file) => {
    let text = '';
    if (rev === undefined) text = existsSync(join(ROOT, file)) ? readFileSync(join(ROOT, file), 'utf8') : '';
    else {
      const shown = git(['show', `${rev}:${file}`]);
      text = shown.ok ? shown.out : '';
    }
    const lines = text
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== '' && !line.startsWith('//'));
    return `${file}\n${lines.join('\n')}`;
  }).join('\n');
}

/** The previous release in this clone's history, or why there is none to test here. */
export function findPreviousRelease(): PreviousRelease | { skip: string } {
  const top = git(['rev-parse', '--show-toplevel']);
  if (!top.ok) return { skip: `no git history here (${top.err || 'not a git clone'}): the previous release is found in a clone's history` };
  if (realpathSync(top.out.trim()) !== realpathSync(ROOT)) return { skip: `${ROOT} is not the top of a git clone (git's top is ${top.out.trim()})` };
  // A shallow clone's history stops early: its oldest commits show no parent.
  const shallow = git(['rev-parse', '--is-shallow-repository']).out.trim() === 'true';
  const cut = 'this shallow clone lacks the history the previous release is found in (git fetch --unshallow)';
  const head = git(['rev-parse', 'HEAD']);
  if (!head.ok) return { skip: `the clone has no commit yet (${head.err})` };
  // An uncommitted edit of the schema is the next change: the release before it is HEAD.
  if (schemaText(undefined) !== schemaText('HEAD')) return { commit: head.out.trim(), why: 'HEAD, as the working tree changes the schema files (uncommitted)', notChanges: [] };
  // main's own line (--first-parent): a merge counts as one change against what main ran before it.
  const log = git(['log', '--first-parent', '--format=%H %P', '--', ...SCHEMA_FILES]);
  assert.ok(log.ok, `git log of the schema files failed: ${log.err}`);
  const notChanges: string[] = [];
  for (const line of log.out.trim().split('\n').filter(Boolean)) {
    const [commit, parent] = line.split(' ') as [string, string | undefined];
    if (parent === undefined) return { skip: shallow ? cut : `the schema files were created in ${commit}, the first commit: no release before it` };
    const subject = git(['log', '-1', '--format=%s', commit]).out.trim();
    if (schemaText(commit) !== schemaText(parent)) return { commit: parent, why: `the parent of ${commit.slice(0, 12)} "${subject.slice(0, 100)}", the newest schema change`, notChanges };
    notChanges.push(`${commit.slice(0, 12)} "${subject.slice(0, 60)}"`);
  }
  return { skip: shallow ? cut : 'no commit changed the schema files' };
}

/** Runs `command` in `cwd`; throws with its output when it fails. */
function run(cwd: string, command: string, args: string[]): void {
  const r = spawnSync(command, args, { cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (r.error || r.status !== 0) {
    throw new Error(`${command} ${args.join(' ')} failed in ${cwd} (${r.error?.message ?? `exit ${r.status}`}):\n${r.stdout}\n${r.stderr}`);
  }
}

interface LockEntry {
  version?: string;
  dev?: boolean;
  optional?: boolean;
  link?: boolean;
}

/**
 * The packages the release runs on (its lock's entries that are not for development) whose version installed in
 * this clone's node_modules differs from its lock's, as `path: locked -> installed`. The tools that build it
 * (TypeScript, esbuild) and what the console bundles (development packages in the lock) are this clone's too:
 * they change how it is built, not what it does with the database.
 */
function runtimeDifferences(dir: string): string[] {
  const lockFile = join(dir, 'package-lock.json');
  if (!existsSync(lockFile)) return ['package-lock.json: none in the release, its dependencies cannot be compared'];
  const lock = JSON.parse(readFileSync(lockFile, 'utf8')) as { packages?: Record<string, LockEntry> };
  const out: string[] = [];
  for (const [path, entry] of Object.entries(lock.packages ?? {})) {
    if (!path.startsWith('node_modules/') || entry.dev || entry.link || entry.version === undefined) continue;
    const installed = join(ROOT, path, 'package.json');
    if (!existsSync(installed)) {
      if (!entry.optional) out.push(`${path}: ${entry.version} -> not installed`);
      continue;
    }
    const version = (JSON.parse(readFileSync(installed, 'utf8')) as { version?: string }).version;
    if (version !== entry.version) out.push(`${path}: ${entry.version} -> ${version}`);
  }
  return out;
}

export interface BuiltRelease {
  /** The folder holding the release, built (removed after the test). */
  dir: string;
  /** Its command. */
  bin: string;
  /** The steps of its build script, each run or left out with the reason. */
  steps: string[];
  /** Runtime packages installed here at other versions than its lock's (empty: it runs on exactly its own). */
  dependencyDifferences: string[];
  /** How long the extraction and the build took (ms). */
  buildMs: number;
}

/**
 * Extracts `commit` into a new temporary folder (removed after the test) with this clone's node_modules linked
 * in, and builds what `serve` needs, following the release's own build script: the service's TypeScript (`src/`
 * only: the tests are not served), then every `node scripts/...` step (the OpenAPI document compiled for
 * start-up, the console, which `serve` refuses to start without unless CONSOLE=off). Left out: a `tsc` step that
 * only type-checks (`noEmit`, the console's) or builds a workspace package (the client, which the service never
 * imports). Any other step fails the build here, saying so.
 * The folder is new on every run, so no build of another commit can stand in for it.
 */
export function buildRelease(t: TestContext, commit: string): BuiltRelease {
  const started = Date.now();
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-previous-release-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const tar = join(dir, '.release.tar');
  run(ROOT, 'git', ['archive', '--format=tar', '-o', tar, commit]);
  run(dir, 'tar', ['-xf', tar]);
  rmSync(tar);
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { scripts?: { build?: string }; bin?: Record<string, string> };
  const script = pkg.scripts?.build;
  assert.ok(script, `the release ${commit} has no build script`);
  const steps: string[] = [];
  for (const step of script.split('&&').map((s) => s.trim())) {
    const words = step.split(/\s+/);
    if (step === 'tsc -p tsconfig.json') {
      // Its own compiler settings, over src/ alone.
      writeFileSync(join(dir, 'tsconfig.previous-release.json'), JSON.stringify({ extends: './tsconfig.json', include: ['src'] }));
      run(dir, process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.previous-release.json']);
      steps.push(`${step} (src/ only)`);
    } else if (words[0] === 'tsc' && words[1] === '-p' && words.length === 3 && /"noEmit"\s*:\s*true/.test(readFileSync(join(dir, words[2]!), 'utf8'))) {
      steps.push(`${step}: left out (a type check, it emits nothing)`);
    } else if (words[0] === 'tsc' && words[1] === '-p' && words.length === 3 && words[2]!.startsWith('packages/')) {
      steps.push(`${step}: left out (a workspace package, which the service does not import)`);
    } else if (words[0] === 'node' && words.length === 2 && /^scripts\/[\w.-]+\.m?js$/.test(words[1]!)) {
      run(dir, process.execPath, [words[1]!]);
      steps.push(step);
    } else {
      throw new Error(`the release's build step "${step}" is not one test/helpers/previous-release.ts knows how to run`);
    }
  }
  const bin = join(dir, pkg.bin?.['plant-store'] ?? 'bin/plant-store.js');
  assert.ok(existsSync(bin), `the release has no command at ${bin}`);
  return { dir, bin, steps, dependencyDifferences: runtimeDifferences(dir), buildMs: Date.now() - started };
}

/** The release's command run to completion with exactly `env` (no inherited plant-store settings). */
export function runRelease(release: BuiltRelease, args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const proc = spawn(process.execPath, [release.bin, ...args], { cwd: release.dir, env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    proc.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The release's `serve` with exactly `env` (and PORT=0), once it listens; killed after the test if still running. */
export function serveRelease(t: TestContext, release: BuiltRelease, env: Record<string, string>): Promise<ChildServer> {
  return spawnServer(t, {}, { bin: release.bin, cwd: release.dir, fullEnv: cleanEnv({ PORT: '0', LOG_LEVEL: 'info', ...env }) });
}

/**
 * fetch for the release's server: its answers are checked against the release's own OpenAPI document (not
 * this clone's, which the suite's fetch checks by default) and must be ones it describes.
 */
export function releaseFetch(release: BuiltRelease): (url: string, init?: RequestInit) => Promise<Response> {
  const validator = new ResponseValidator(parseYaml(readFileSync(join(release.dir, 'openapi/plant-store.yaml'), 'utf8')) as Record<string, unknown>);
  return async (url, init = {}) => {
    const headers = new Headers(init.headers);
    headers.set('x-conformance', 'skip');
    const res = await fetch(url, { ...init, headers });
    const method = init.method ?? 'GET';
    const streaming = (res.headers.get('content-type') ?? '').startsWith('text/event-stream');
    const body = res.body === null || streaming ? '' : await res.clone().text();
    const problems = await validator.check(method, new URL(url).pathname, { status: res.status, headers: res.headers, body });
    assert.deepEqual(problems, [], `the previous release's answer to ${method} ${url} is not one its own document describes`);
    return res;
  };
}
