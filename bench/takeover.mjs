// npm --prefix bench run takeover (a stage of npm run bench): an upgrade by takeover under a steady load. For each
// store (SQLite, and PostgreSQL where lib/pg.mjs finds its binaries) and each WORKERS (1, 2), a repetition starts
// `plant-store serve` (HOST 127.0.0.1, a fixed PORT, RUNTIME_DIRECTORY a temp dir) and drives it with
// lib/open-loop.mjs at a fixed rate of GET /plants/{id} and POST /plants (on the load core; the servers are not
// pinned: WORKERS=2 wants both cores). After a warm-up it measures the server alone (its process tree's CPU time
// and PSS), then spawns a second serve with the same settings, which takes over, and measures:
//  - from the spawn: its first "Server listening" line, its "telling it to hand over" line (every worker
//    listening), and the old server's exit (the `ms` of its "took over" line is the old one's wait);
//  - CPU while both run (spawn → the old one's exit): both process trees (workers included) from /proc/<pid>/stat,
//    the old one's total read by the shell that started it once it exits (its children's time, /proc/$$/stat),
//    less what the old one alone used in the same time;
//  - memory while both run: the PSS of both trees (/proc/<pid>/smaps_rollup, every 100 ms), peak against the
//    median of the old one alone;
//  - failed requests (no answer, or not 2xx) over the whole load, with the first ones' times and causes.
// Writes results/takeover.{json,md}; run as a stage of npm run bench (--only takeover) its rows join results.md.
// Env: TAKEOVER_ROOT (the built checkout to measure; default this one), TAKEOVER_REPS (3), TAKEOVER_WORKERS (1,2),
// TAKEOVER_STORES (sqlite,postgres; postgres is skipped where its binaries are missing), TAKEOVER_RATE (400 req/s),
// TAKEOVER_CONNS (64), TAKEOVER_ALONE_SECONDS (3), BENCH_MACHINE (the machine's name in the results; default the
// host name), BENCH_OUT (results file prefix; default results/takeover). About two minutes with both stores.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, hostname, loadavg, release, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { BENCH_DIR, LOAD_CORE, ROOT, SEEDED, SEED_BASE, childPids, cpuMs, freePort } from './lib/servers.mjs';
import { postgresAvailable, startPostgres } from './lib/pg.mjs';
import { takeoverSection } from './lib/report.mjs';

const env = process.env;
const list = (name, dflt) => (env[name] ?? dflt).split(',').map((s) => s.trim()).filter(Boolean);
const cfg = {
  reps: Number(env.TAKEOVER_REPS ?? 3),
  workers: list('TAKEOVER_WORKERS', '1,2').map(Number),
  stores: list('TAKEOVER_STORES', 'sqlite,postgres'),
  rate: Number(env.TAKEOVER_RATE ?? 400),
  getEvery: 2,
  conns: Number(env.TAKEOVER_CONNS ?? 64),
  warmupS: 1,
  aloneS: Number(env.TAKEOVER_ALONE_SECONDS ?? 3),
  tailS: 1,
  loadCore: LOAD_CORE,
};
// The build measured: this repository's, or TAKEOVER_ROOT's (a built checkout of its own, e.g. git worktree add
// --detach /tmp/head HEAD && ln -s "$PWD/node_modules" /tmp/head/ && (cd /tmp/head && npm run build), which a
// rebuild here during the run cannot change under it).
const root = env.TAKEOVER_ROOT ?? ROOT;
const CLI = join(root, 'bin/plant-store.js');
if (!existsSync(join(root, 'dist/src/cli/main.js'))) throw new Error(`${root}: build it first (npm run build)`);
const log = (...a) => console.error(new Date().toISOString().slice(11, 19), ...a);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (xs) => {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
let salt = 1 + (Math.floor(Date.now() / 60_000) % 8000) * 1000 + 900;
const readSetting = (path) => {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return 'unknown';
  }
};
function git(args) {
  try {
    return execFileSync('git', ['-C', root, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return '';
  }
}
const machine = {
  name: env.BENCH_MACHINE ?? hostname(), cpu: cpus()[0]?.model, cores: cpus().length, kernel: release(), node: process.version,
  // Without it, a connection queued on the old server's socket as it closes can be reset (takeover.ts).
  migrateReq: readSetting('/proc/sys/net/ipv4/tcp_migrate_req'), loadBefore: loadavg(), started: new Date().toISOString(),
  // The build measured is dist/ as it is: say whether src/ differed from the commit when the run began.
  commit: git(['rev-parse', '--short', 'HEAD']), srcChanged: git(['status', '--porcelain', '--', 'src']) !== '',
};
log('machine', JSON.stringify(machine), 'config', JSON.stringify(cfg));

/** A store for the case: migrated, with a token and the SEEDED plants the GETs read. */
async function makeStore(kind) {
  let databaseUrl, cleanup;
  if (kind === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'bench-takeover-'));
    databaseUrl = `sqlite:${join(dir, 'plant-store.db')}`;
    cleanup = () => rmSync(dir, { recursive: true, force: true });
  } else {
    const pg = await startPostgres();
    databaseUrl = pg.url;
    cleanup = () => pg.stop();
  }
  const cliEnv = { ...env, DATABASE_URL: databaseUrl };
  execFileSync(process.execPath, [CLI, 'migrate'], { env: cliEnv, stdio: 'ignore' });
  const out = execFileSync(process.execPath, [CLI, 'token', 'create', '--scopes', 'plants:read,plants:write', '--name', 'bench'], { env: cliEnv, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  const lines = Array.from({ length: SEEDED }, (_, k) => `{"id":${SEED_BASE + 1 + k},"name":"Seed ${1 + k}","tag":"seed"}\n`).join('');
  execFileSync(process.execPath, [CLI, 'import', '--format', 'jsonl', '-'], { env: cliEnv, input: lines, stdio: ['pipe', 'ignore', 'ignore'] });
  return { kind, databaseUrl, token: out.trim().split('\n').pop().trim(), cleanup };
}

/**
 * `plant-store serve` started as `npm start` starts it, under a shell that says, once it exits, when (ns) and the
 * CPU time it used with its workers (the shell's children's time: utime + cutime, stime + cstime of what it waited
 * for). Its log lines are kept parsed, each with its own `time`.
 */
function startServer(store, workers, port, runtimeDir) {
  const script = '"$@"; code=$?; echo "BENCH_EXIT $code $(date +%s%N) $(cat /proc/$$/stat)"; exit $code';
  const sh = spawn('sh', ['-c', script, 'sh', process.execPath, '--max-semi-space-size=16', CLI, 'serve'], {
    env: {
      ...env, DATABASE_URL: store.databaseUrl, PORT: String(port), HOST: '127.0.0.1', WORKERS: String(workers), RUNTIME_DIRECTORY: runtimeDir,
      LOG_LEVEL: 'info', BOOTSTRAP_TOKEN: 'false', RATE_LIMIT_PER_TOKEN: '100000000',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const server = { sh, lines: [], stderr: '', waiters: new Set(), exit: undefined };
  const check = () => {
    for (const w of server.waiters) {
      const found = server.lines.find(w.match);
      if (found) (server.waiters.delete(w), w.resolve(found));
    }
  };
  createInterface({ input: sh.stdout }).on('line', (line) => {
    if (line.startsWith('BENCH_EXIT ')) {
      const [, code, ns, ...stat] = line.split(' ');
      const f = stat.join(' ').split(') ')[1].split(' ');
      // Fields 16 and 17 (cutime, cstime) of the shell, in clock ticks (100 a second).
      server.exit = { code: Number(code), at: Number(BigInt(ns) / 1_000_000n), cpuMs: (Number(f[13]) + Number(f[14])) * 10 };
      return;
    }
    try {
      server.lines.push(JSON.parse(line));
    } catch {
      server.lines.push({ msg: line });
    }
    check();
  });
  sh.stderr.on('data', (d) => (server.stderr = (server.stderr + d).slice(-4000)));
  server.exited = new Promise((resolve) => sh.once('close', () => resolve(server.exit ?? { code: sh.exitCode, at: Date.now(), cpuMs: NaN })));
  server.line = (match, ms = 60_000) =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        server.waiters.delete(w);
        reject(new Error(`no such log line after ${ms} ms; stderr: ${server.stderr.slice(-500)}`));
      }, ms);
      const w = { match, resolve: (l) => (clearTimeout(timer), resolve(l)) };
      server.waiters.add(w);
      server.exited.then(() => {
        if (server.waiters.delete(w)) (clearTimeout(timer), reject(new Error(`serve exited (${sh.exitCode}) first; stderr: ${server.stderr.slice(-500)}`)));
      });
      check();
    });
  // The server itself is the shell's one child.
  server.pid = async () => {
    for (let i = 0; i < 5_000; i++) {
      const [pid] = childPids(sh.pid);
      if (pid) return pid;
      await sleep(2);
    }
    throw new Error('serve did not start');
  };
  server.stop = async () => {
    if (sh.exitCode !== null || sh.signalCode !== null) return;
    for (const pid of childPids(sh.pid)) process.kill(pid, 'SIGTERM');
    const t = setTimeout(() => sh.kill('SIGKILL'), 20_000);
    await server.exited;
    clearTimeout(t);
  };
  return server;
}

const kb = (text, field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN);
/** PSS and RSS of a process and its children (the workers), in MB; undefined once it is gone. */
function treeMemory(pid) {
  try {
    let pss = 0, rss = 0;
    for (const p of [pid, ...childPids(pid)]) {
      pss += kb(readFileSync(`/proc/${p}/smaps_rollup`, 'utf8'), 'Pss');
      rss += kb(readFileSync(`/proc/${p}/status`, 'utf8'), 'VmRSS');
    }
    return { pss: pss / 1024, rss: rss / 1024 };
  } catch {
    return undefined;
  }
}

/** lib/open-loop.mjs on the load core: every other request a GET of a seeded plant; stop() ends it early and gives its report. */
function startLoad(port, token) {
  const child = spawn('taskset', ['-c', LOAD_CORE, process.execPath, join(BENCH_DIR, 'lib/open-loop.mjs'), `http://127.0.0.1:${port}/plants`, String(cfg.rate), '120', String(cfg.conns)], {
    env: { ...env, BENCH_TOKEN: token, BENCH_SALT: String(salt++), BENCH_GET_EVERY: String(cfg.getEvery), BENCH_SEEDED: String(SEEDED), BENCH_SEED_BASE: String(SEED_BASE) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const reported = new Promise((resolve, reject) =>
    child.once('close', () => {
      const line = out.split('\n').find((l) => l.startsWith('BENCHJSON '));
      if (line) resolve(JSON.parse(line.slice(10)));
      else reject(new Error(`the load generator gave no report: ${out.slice(-500)}`));
    }));
  return {
    async stop() {
      // taskset execs node: the child is the generator itself.
      child.kill('SIGTERM');
      return reported;
    },
  };
}

async function repetition(store, workers, rep) {
  const port = await freePort();
  const runtimeDir = mkdtempSync(join(tmpdir(), 'bench-takeover-run-'));
  const old = startServer(store, workers, port, runtimeDir);
  let next, load;
  try {
    await old.line((l) => l.msg === 'plant-store is listening');
    const oldPid = await old.pid();
    load = startLoad(port, store.token);
    await sleep(cfg.warmupS * 1000);

    // The old server alone under the load.
    const samples = [];
    const cpu0 = cpuMs(oldPid), t0 = performance.now();
    while (performance.now() - t0 < cfg.aloneS * 1000) {
      samples.push(treeMemory(oldPid));
      await sleep(250);
    }
    const cpu1 = cpuMs(oldPid), t1 = performance.now();
    const alone = { cpuMsPerS: ((cpu1 - cpu0) * 1000) / (t1 - t0), pssMb: median(samples.map((s) => s.pss)), rssMb: median(samples.map((s) => s.rss)) };

    // The second server, until the old one has exited.
    const spawnedAt = Date.now();
    const spawnedPerf = performance.now();
    next = startServer(store, workers, port, runtimeDir);
    const nextPid = await next.pid();
    const both = { peakPssMb: 0, peakRssMb: 0, samples: 0 };
    let oldGone = false;
    const oldExited = old.exited.then((e) => ((oldGone = true), e));
    while (!oldGone) {
      const a = treeMemory(oldPid), b = treeMemory(nextPid);
      if (a && b && !oldGone) {
        both.peakPssMb = Math.max(both.peakPssMb, a.pss + b.pss);
        both.peakRssMb = Math.max(both.peakRssMb, a.rss + b.rss);
        both.samples++;
      }
      await Promise.race([sleep(100), oldExited]);
    }
    const exit = await oldExited;
    const nextCpu = cpuMs(nextPid);
    const overlapS = (performance.now() - spawnedPerf) / 1000;
    const oldCpu = exit.cpuMs - cpu1;
    const cpu = { oldMs: oldCpu, newMs: nextCpu, overlapS, extraMs: oldCpu + nextCpu - alone.cpuMsPerS * overlapS, ratio: (oldCpu + nextCpu) / (alone.cpuMsPerS * overlapS) };
    await next.line((l) => /^took over/.test(l.msg ?? ''), 30_000);
    await sleep(cfg.tailS * 1000);
    const loadResult = await load.stop();
    load = undefined;

    const at = (server, match) => server.lines.find((l) => match(l.msg ?? ''))?.time;
    const listening = next.lines.filter((l) => /^Server listening at/.test(l.msg ?? '')).map((l) => l.time);
    const tookOver = next.lines.find((l) => /^took over/.test(l.msg ?? ''));
    const ms = {
      listening: Math.min(...listening) - spawnedAt,
      allListening: Math.max(...listening) - spawnedAt,
      asked: at(next, (m) => m.startsWith('ready beside the running server')) - spawnedAt,
      oldHandingOver: at(old, (m) => m.startsWith('handing over to the new server')) - spawnedAt,
      oldHandedOver: old.lines.filter((l) => l.msg === 'handed over' && l.worker === undefined).map((l) => l.time)[0] - spawnedAt,
      tookOver: tookOver.time - spawnedAt,
      oldWait: tookOver.ms,
      oldExited: exit.at - spawnedAt,
    };
    const failedBy = {};
    for (const [status, n] of Object.entries(loadResult.statuses)) if (status < 200 || status > 299) failedBy[status] = n;
    for (const [code, n] of Object.entries(loadResult.errorCodes ?? {})) failedBy[code] = n;
    const failed = loadResult.errors + loadResult.non2xx;
    const failures = (loadResult.failures ?? []).map((f) => ({ ...f, msFromSpawn: f.at - spawnedAt, dueFromSpawn: f.due - spawnedAt }));
    // Where a request failed, both servers' log lines (ms from the spawn) say what each was doing then.
    const logOf = (server) => server.lines.filter((l) => l.msg !== 'request completed').map((l) => `${l.time - spawnedAt} ${l.worker ? `worker ${l.worker} ` : ''}${l.msg}`);
    const result = {
      rep, port, ...(failed && { logs: { old: logOf(old), new: logOf(next) } }), oldExitCode: exit.code, handover: tookOver.msg.startsWith('took over: the previous server handed over') ? 'done' : tookOver.msg,
      ms, cpu, alone, both, failed, failedBy, failures,
      load: { requests: loadResult.requests, achieved_rps: loadResult.achieved_rps, p50_ms: loadResult.p50_ms, p99_ms: loadResult.p99_ms, max_ms: loadResult.max_ms, msFromSpawnToLoadStart: loadResult.startedAt - spawnedAt },
      load1: loadavg()[0],
    };
    log(`${store.kind} WORKERS=${workers} rep ${rep}: listening ${ms.listening} ms, asked ${ms.asked} ms, old exited ${ms.oldExited} ms (its wait ${ms.oldWait} ms, exit ${exit.code}); ` +
      `CPU alone ${alone.cpuMsPerS.toFixed(0)} ms/s, both ${(oldCpu + nextCpu).toFixed(0)} ms over ${overlapS.toFixed(2)} s: extra ${cpu.extraMs.toFixed(0)} ms (${cpu.ratio.toFixed(2)}x); ` +
      `PSS alone ${alone.pssMb.toFixed(0)} MB, both peak ${both.peakPssMb.toFixed(0)} MB; ${loadResult.requests} requests, p99 ${loadResult.p99_ms.toFixed(1)} ms, max ${loadResult.max_ms.toFixed(0)} ms, failed ${failed}` +
      (failed ? ` ${JSON.stringify(failedBy)} first at ${failures.slice(0, 5).map((f) => `${f.method} ${f.what} (${f.nth > 1 ? `request ${f.nth} of its connection, idle ${f.idleMs} ms after a ${f.previous}` : f.nth === 1 ? 'a new connection' : 'no connection'}, due ${f.dueFromSpawn} ms) ${f.msFromSpawn} ms`).join(', ')}` : ''));
    return result;
  } finally {
    if (load) await load.stop().catch(() => {});
    await next?.stop();
    await old.stop();
    rmSync(runtimeDir, { recursive: true, force: true });
  }
}

const cases = [];
const skipped = [];
for (const kind of cfg.stores) {
  if (kind === 'postgres' && !postgresAvailable()) {
    skipped.push('PostgreSQL (no server binaries under /usr/lib/postgresql; PG_BIN names them)');
    log('PostgreSQL: no server binaries, skipped');
    continue;
  }
  if (kind !== 'sqlite' && kind !== 'postgres') throw new Error(`TAKEOVER_STORES: sqlite or postgres, not ${kind}`);
  const store = await makeStore(kind);
  try {
    for (const workers of cfg.workers) {
      const reps = [];
      for (let rep = 1; rep <= cfg.reps; rep++) {
        reps.push(await repetition(store, workers, rep));
        await sleep(300);
      }
      cases.push({ store: kind === 'sqlite' ? 'SQLite' : 'PostgreSQL', workers, reps });
    }
  } finally {
    store.cleanup();
  }
}
machine.loadAfter = loadavg();
machine.finished = new Date().toISOString();
const result = { machine, cfg, cases, skipped };
const prefix = env.BENCH_OUT ?? join(BENCH_DIR, 'results', 'takeover');
writeFileSync(`${prefix}.json`, JSON.stringify(result, null, 1) + '\n');
const md = takeoverSection(result, '#').join('\n');
writeFileSync(`${prefix}.md`, md);
console.log(md);
const failed = cases.flatMap((c) => c.reps).reduce((a, r) => a + r.failed, 0);
if (failed) log(`${failed} failed requests: see the failures of each repetition in ${prefix}.json`);
