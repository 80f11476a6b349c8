// The scaling fixture: a migrated plant-store database holding N plants (ids 1..N, tag "seed"), made once
// with direct inserts in one transaction and kept in bench/.data/ (git-ignored) for later runs.
import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readSync, statSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { BENCH_DIR, ROOT } from './servers.mjs';

const Database = createRequire(join(ROOT, 'package.json'))('better-sqlite3');

export async function bigDatabase(rows, log) {
  const dir = join(BENCH_DIR, '.data');
  // The schema version in the name: a file of an older one would be migrated (and its folded names filled) at start.
  const file = join(dir, `plants-${rows}-v12.db`);
  mkdirSync(dir, { recursive: true });
  if (existsSync(file)) {
    log(`reusing ${file}`);
    return { file, rows, sizeMb: statSync(file).size / 2 ** 20 };
  }
  const tmp = `${file}.tmp`;
  rmSync(tmp, { force: true });
  const started = performance.now();
  execFileSync(process.execPath, [join(ROOT, 'bin/plant-store.js'), 'migrate'], { env: { ...process.env, DATABASE_URL: `sqlite:${tmp}` }, stdio: 'ignore' });
  const db = new Database(tmp);
  // Built once, thrown away if interrupted: no journal needed while seeding. WAL again afterwards, as the service runs it.
  db.pragma('journal_mode = OFF');
  db.pragma('synchronous = OFF');
  // name_folded as plants/plant-search.ts folds it (these names are ASCII: lower case); triggers index it.
  const insert = db.prepare("INSERT INTO plants (id, name, tag, created_at, name_folded) VALUES (?, ?, 'seed', ?, ?)");
  const now = Date.now();
  db.transaction(() => {
    for (let i = 1; i <= rows; i++) {
      insert.run(i, `Plant number ${i}`, now, `plant number ${i}`);
      if (i % 1_000_000 === 0) log(`seeded ${i} rows`);
    }
  })();
  db.pragma('journal_mode = WAL');
  db.close();
  renameSync(tmp, file);
  const seedSeconds = (performance.now() - started) / 1000;
  log(`seeded ${rows} rows in ${seedSeconds.toFixed(1)} s`);
  return { file, rows, seedSeconds, sizeMb: statSync(file).size / 2 ** 20 };
}

/**
 * Reads a database file once into the OS page cache, so that cells measure the store, not a cold disk; returns
 * the seconds it took.
 */
export function warmPageCache(file) {
  const t0 = performance.now();
  const fd = openSync(file, 'r');
  const buf = Buffer.allocUnsafe(8 << 20);
  try {
    while (readSync(fd, buf, 0, buf.length, null) > 0);
  } finally {
    closeSync(fd);
  }
  return (performance.now() - t0) / 1000;
}
