// What the tests of `plant-store import` and `export` (import-export-*.test.ts) share: a folder and a new
// database, input files, the counts of an import's summary, and the int64 edges as the files write them.
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freshDatabaseUrl, tempDir } from '../helpers/app.js';

/** A folder for input files and a new database of the store under test (`sqlite` forces a SQLite file, `db`). */
export async function setup(t: TestContext, sqlite = false): Promise<{ dir: string; env: Record<string, string>; db: string }> {
  const dir = tempDir(t);
  const db = join(dir, 'plants.db');
  return { dir, db, env: { DATABASE_URL: sqlite ? `sqlite:${db}` : await freshDatabaseUrl(t) } };
}

export function file(dir: string, name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

/** The number on the summary line `what: N`. */
export function count(stdout: string, what: string): number {
  const m = new RegExp(`^${what}: (\\d+)$`, 'm').exec(stdout);
  assert.ok(m, `no "${what}" in:\n${stdout}`);
  return Number(m[1]);
}

export const MAX = '9223372036854775807';
export const MIN = '-9223372036854775808';
