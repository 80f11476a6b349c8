// npm run find: finding plants on a big store (issue 29), on SQLite and, with BENCH_FIND_ENGINES=sqlite,postgres,
// on PostgreSQL too. The store is made as an operator's would be: at schema version 10 (before search) holding N
// plants, then opened at version 11, which adds the folded names and the search and name-order indexes, then by
// this build (version 12: names beyond ASCII folded again, the folded-name order's indexes); both upgrades are
// timed. Then, per round and concurrency, GET by id, the plain id-ordered list and each find cell,
// server on core 0 and wrk on core 1, each cell read against the plain list of the same round and concurrency
// (target: at least 0.5x its req/s, p99 under 50 ms).
//
// Names: `Plant number N`, but every millionth `Welwitschia mirabilis N`: `ber` is in nearly every name, `wel` in
// N/1,000,000 of them. Env: BENCH_FIND_ROWS (10000000), BENCH_FIND_ENGINES (sqlite), BENCH_CONNS (10,100),
// BENCH_SECONDS (4), BENCH_WARMUP (2), BENCH_ROUNDS (2), BENCH_OUT (results/find). The SQLite store is kept in
// bench/.data/ (git-ignored) for later runs; PostgreSQL's is made again each run.
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus, hostname, loadavg, release } from 'node:os';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { BENCH_DIR, KINDS, ROOT, freePort } from './lib/servers.mjs';
import { startPostgres } from './lib/pg.mjs';
import { warmPageCache } from './lib/big-db.mjs';
import { runWrk } from './lib/wrk.mjs';

const env = process.env;
const rows = Number(env.BENCH_FIND_ROWS ?? 10_000_000);
const engines = (env.BENCH_FIND_ENGINES ?? 'sqlite').split(',').filter(Boolean);
const conns = (env.BENCH_CONNS ?? '10,100').split(',').map(Number);
const seconds = Number(env.BENCH_SECONDS ?? 4);
const warmup = Number(env.BENCH_WARMUP ?? 2);
const rounds = Number(env.BENCH_ROUNDS ?? 2);
const log = (...a) => console.error(new Date().toISOString().slice(11, 19), ...a);
const req = createRequire(join(ROOT, 'package.json'));
const pg = req('pg');
const { openStore } = await import(join(ROOT, 'dist/src/storage/open-store.js'));
const { FOLDED_NAMES_VERSION } = await import(join(ROOT, 'dist/src/storage/schema-history.js'));
const sqliteMigrations = (await import(join(ROOT, 'dist/src/storage/sqlite/migrations.js'))).MIGRATIONS;
const pgMigrations = (await import(join(ROOT, 'dist/src/storage/postgres/migrations.js'))).MIGRATIONS;
const before = sqliteMigrations.filter((m) => m.version < FOLDED_NAMES_VERSION);
const beforePg = pgMigrations.filter((m) => m.version < FOLDED_NAMES_VERSION);
const LATEST = sqliteMigrations.at(-1).version;

/** Opens the store at version 11, then at the latest: the seconds each upgrade took. */
async function upgrade(url, migrations, engine) {
  const t0 = performance.now();
  await (await openStore(url, { migrations: migrations.filter((m) => m.version <= FOLDED_NAMES_VERSION) })).store.close();
  const to11 = (performance.now() - t0) / 1000;
  log(`${engine}: upgraded to version ${FOLDED_NAMES_VERSION} in ${to11.toFixed(1)} s`);
  const t1 = performance.now();
  await (await openStore(url)).store.close();
  const toLatest = (performance.now() - t1) / 1000;
  log(`${engine}: upgraded to version ${LATEST} in ${toLatest.toFixed(1)} s`);
  return { upgrade: to11, upgradeLatest: toLatest };
}

const RARE_EVERY = 1_000_000;
const middle = Math.floor(rows / 2) + 1; // not a rare one
const CELLS = [
  { cell: 'GET by id', script: 'get' },
  { cell: 'plain list', path: '/plants?limit=100' },
  { cell: 'q common (ber)', path: '/plants?limit=100&q=ber' },
  { cell: 'q rare (wel)', path: '/plants?limit=100&q=wel' },
  // Not a target of the issue: a q in a name order walks the name index (SQLite) or lets the planner choose.
  { cell: 'q common, sort=name', path: '/plants?limit=100&q=ber&sort=name', informational: true },
  { cell: 'sort=name first page', path: '/plants?limit=100&sort=name' },
  { cell: 'sort=name deep page', path: `/plants?limit=100&sort=name&after=${middle}&after_name=${encodeURIComponent(`Plant number ${middle}`)}` },
  { cell: 'sort=-name first page', path: '/plants?limit=100&sort=-name' },
  { cell: 'sort=-id', path: '/plants?limit=100&sort=-id' },
  { cell: 'count=exact, q rare', path: '/plants?limit=100&q=wel', prefer: 'count=exact' },
];

/** SQL of the seed names (id i): shared by both engines' seeding. */
const nameSql = (i, concat) => `CASE WHEN ${i} % ${RARE_EVERY} = 0 THEN ${concat("'Welwitschia mirabilis '", i)} ELSE ${concat("'Plant number '", i)} END`;

async function sqliteStore() {
  const dir = join(BENCH_DIR, '.data');
  const file = join(dir, `find-${rows}-v${LATEST}.db`);
  mkdirSync(dir, { recursive: true });
  // Reused: with the times it took to make (written beside it when it was made).
  if (existsSync(file)) return { url: `sqlite:${file}`, file, reused: true, ...JSON.parse(readFileSync(`${file}.json`, 'utf8')) };
  const tmp = `${file}.tmp`;
  for (const f of [tmp, `${tmp}-wal`, `${tmp}-shm`]) rmSync(f, { force: true });
  const url = `sqlite:${tmp}`;
  await (await openStore(url, { migrations: before })).store.close();
  const t0 = performance.now();
  const Database = req('better-sqlite3');
  const db = new Database(tmp);
  db.exec(`WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ${rows})
    INSERT INTO plants (id, name, tag, created_at) SELECT i, ${nameSql('i', (a, b) => `${a} || ${b}`)}, 'seed', 0 FROM c`);
  db.close();
  const seeded = (performance.now() - t0) / 1000;
  log(`sqlite: seeded ${rows} plants at version ${FOLDED_NAMES_VERSION - 1} in ${seeded.toFixed(1)} s`);
  const upgrades = await upgrade(url, sqliteMigrations, 'sqlite');
  for (const f of ['-wal', '-shm']) rmSync(`${tmp}${f}`, { force: true });
  renameSync(tmp, file);
  writeFileSync(`${file}.json`, JSON.stringify({ seeded, ...upgrades }));
  return { url: `sqlite:${file}`, file, seeded, ...upgrades };
}

async function postgresStore() {
  const server = await startPostgres({ settings: { shared_buffers: '1GB', maintenance_work_mem: '512MB', max_wal_size: '8GB' } });
  await (await openStore(server.url, { migrations: beforePg })).store.close();
  const t0 = performance.now();
  const client = new pg.Client({ connectionString: server.url });
  await client.connect();
  await client.query(`INSERT INTO plants (id, name, tag, created_at)
    SELECT i, ${nameSql('i', (a, b) => `${a} || ${b}`)}, 'seed', now() FROM generate_series(1::int8, ${rows}) AS i`);
  await client.query('VACUUM ANALYZE plants');
  await client.end();
  const seeded = (performance.now() - t0) / 1000;
  log(`postgres: seeded ${rows} plants at version ${FOLDED_NAMES_VERSION - 1} in ${seeded.toFixed(1)} s`);
  const upgrades = await upgrade(server.url, pgMigrations, 'postgres');
  const analyze = new pg.Client({ connectionString: server.url });
  await analyze.connect();
  await analyze.query('VACUUM ANALYZE plants');
  await analyze.end();
  return { url: server.url, server, seeded, ...upgrades };
}


let salt = 1 + (Math.floor(Date.now() / 60_000) % 8000) * 1000;
const plantStore = KINDS.find((k) => k.name === 'plant-store');
const cells = [];
const stores = {};
for (const engine of engines) {
  const store = engine === 'sqlite' ? await sqliteStore() : await postgresStore();
  stores[engine] = { seeded: store.seeded, upgrade: store.upgrade, upgradeLatest: store.upgradeLatest, reused: store.reused ?? false, sizeMb: store.file ? statSync(store.file).size / 2 ** 20 : undefined };
  if (store.file) warmPageCache(store.file);
  const port = await freePort();
  const server = { ...(await plantStore.start(port, { databaseUrl: store.url })), port };
  try {
    for (let round = 1; round <= rounds; round++) {
      const order = round % 2 === 1 ? CELLS : [...CELLS].reverse();
      for (const c of conns) {
        for (const cell of order) {
          const wenv = { BENCH_TOKEN: server.token, BENCH_SEEDED: String(rows), BENCH_SEED_BASE: '0', ...(cell.path && { BENCH_PATH: cell.path }), ...(cell.prefer && { BENCH_PREFER: cell.prefer }) };
          const run = (s) => runWrk({ script: cell.script ?? 'list', port, conns: c, seconds: s, salt: salt++, connectPauseMs: 300, env: wenv });
          await run(warmup);
          const r = await run(seconds);
          const ok = Object.entries(r.statuses).reduce((n, [k, v]) => n + (k >= 200 && k <= 299 ? v : 0), 0);
          const all = Object.values(r.statuses).reduce((a, b) => a + b, 0);
          const out = { engine, round, conns: c, cell: cell.cell, rps: r.requests / r.busy_s, p50_ms: r.p50_us / 1000, p99_ms: r.p99_us / 1000, non2xx: all - ok, load1: loadavg()[0] };
          cells.push(out);
          log(`${engine} c=${c} ${cell.cell.padEnd(24)} round ${round}: ${Math.round(out.rps)} req/s  p50 ${out.p50_ms.toFixed(2)} ms  p99 ${out.p99_ms.toFixed(2)} ms  non2xx ${out.non2xx}`);
        }
      }
    }
  } finally {
    await server.stop();
    store.server?.stop();
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
const machine = { host: hostname(), cpu: cpus()[0]?.model, cores: cpus().length, kernel: release(), node: process.version };
const md = [
  `# Finding plants on a store of ${rows.toLocaleString('en')} plants`, '',
  `${new Date().toISOString()} on ${machine.host}: ${machine.cpu}, ${machine.cores} cores, kernel ${machine.kernel}, Node ${machine.node}. ` +
    `Server on core 0, wrk on core 1; ${warmup} s warm-up and ${seconds} s measured per cell; ${rounds} rounds, the second in reverse order. ` +
    'Made by `npm --prefix bench run find` (bench/find.mjs).', '',
  `| engine | store made at version 10 (s) | upgrade to version ${FOLDED_NAMES_VERSION} (s) | then to version ${LATEST} (s) | file MB |`, '|---|---:|---:|---:|---:|',
  ...Object.entries(stores).map(([e, s]) => `| ${e} | ${s.seeded?.toFixed(1)} | ${s.upgrade?.toFixed(1)} | ${s.upgradeLatest?.toFixed(1)}${s.reused ? ' (when the kept file was made)' : ''} | ${s.sizeMb ? Math.round(s.sizeMb) : ''} |`), '',
  'Each cell: req/s per round, the median ratio to the plain list of the same round and concurrency (target ≥ 0.5), p99 per round (target < 50 ms).', '',
  '| engine | c | cell | req/s | × plain list | p99 ms | met | non-2xx |', '|---|---:|---|---:|---:|---:|---|---:|',
];
for (const engine of engines) {
  for (const c of conns) {
    for (const cell of CELLS) {
      const mine = cells.filter((x) => x.engine === engine && x.conns === c && x.cell === cell.cell);
      const ratio = median(mine.map((x) => x.rps / cells.find((p) => p.engine === engine && p.conns === c && p.round === x.round && p.cell === 'plain list').rps));
      const met = cell.cell === 'plain list' || cell.cell === 'GET by id' ? '' : cell.informational ? 'no target' : ratio >= 0.5 && mine.every((x) => x.p99_ms < 50) ? 'yes' : 'no';
      md.push(`| ${engine} | ${c} | ${cell.cell} | ${mine.map((x) => Math.round(x.rps)).join(' \\| ')} | ${ratio.toFixed(2)} | ${mine.map((x) => x.p99_ms.toFixed(1)).join(' \\| ')} | ${met} | ${mine.reduce((n, x) => n + x.non2xx, 0)} |`);
    }
  }
}
md.push('');
const prefix = env.BENCH_OUT ?? join(BENCH_DIR, 'results', 'find');
writeFileSync(`${prefix}.md`, md.join('\n'));
writeFileSync(`${prefix}.json`, JSON.stringify({ machine, rows, stores, cells }, null, 2) + '\n');
console.log(md.join('\n'));
