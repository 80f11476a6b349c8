// Which store the suite runs on, and a fresh empty database of it per test. `npm test` (scripts/test.mjs) runs
// the suite once per store in PLANT_STORE_TEST_STORES, with PLANT_STORE_TEST_STORE set for each run; for
// postgres it starts one throwaway cluster and passes its URL in PLANT_STORE_TEST_PG_URL. A test file run on
// its own with PLANT_STORE_TEST_STORE=postgres and no URL starts a cluster of its own.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import pg from 'pg';
import { startPgCluster } from './pg-cluster.js';
// A file declared for the other store fails here even when run without scripts/test.mjs's --import.
import '../setup/engine-only.js';

export type TestStore = 'sqlite' | 'postgres';

export const TEST_STORE: TestStore = (() => {
  const v = process.env.PLANT_STORE_TEST_STORE ?? 'sqlite';
  if (v !== 'sqlite' && v !== 'postgres') throw new Error(`PLANT_STORE_TEST_STORE must be sqlite or postgres, got "${v}"`);
  return v;
})();

let admin: Promise<{ pool: pg.Pool; url: string }> | undefined;

/** A pool on the maintenance database of the test cluster; it lets the process exit when idle. */
function adminPool(): Promise<{ pool: pg.Pool; url: string }> {
  return (admin ??= (async () => {
    const url = process.env.PLANT_STORE_TEST_PG_URL || (await startPgCluster()).url;
    const pool = new pg.Pool({ connectionString: url, max: 2, idleTimeoutMillis: 1_000, allowExitOnIdle: true });
    pool.on('error', () => {});
    pool.on('connect', (client) => client.on('error', () => {}));
    return { pool, url };
  })());
}

let counter = 0;

function databaseName(): string {
  return `plantstore_test_${process.pid}_${++counter}_${Math.random().toString(36).slice(2, 8)}`;
}

function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

/**
 * A new PostgreSQL database on the test cluster (a copy of `template`, a URL from templateDatabase, if
 * given; else empty), dropped after the test; returns its URL.
 */
export async function freshPostgresUrl(t: TestContext, template?: string): Promise<string> {
  const { pool, url } = await adminPool();
  const name = databaseName();
  await pool.query(`CREATE DATABASE ${name}${template ? ` TEMPLATE ${new URL(template).pathname.slice(1)}` : ''}`);
  // FORCE: connections the test left open (a killed server's) do not keep the database alive.
  t.after(() => pool.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).then(() => {}));
  return withDatabase(url, name);
}

/** A database kept until the process exits, for `fill` to prepare once and freshPostgresUrl to copy. */
export async function templateDatabase(fill: (url: string) => Promise<void>): Promise<string> {
  const { pool, url } = await adminPool();
  const name = databaseName();
  await pool.query(`CREATE DATABASE ${name}`);
  const dbUrl = withDatabase(url, name);
  await fill(dbUrl);
  return dbUrl;
}

/** A DATABASE_URL for a new, empty database of the store under test, removed after the test. */
export async function freshDatabaseUrl(t: TestContext, file = 'plants.db'): Promise<string> {
  if (TEST_STORE === 'postgres') return freshPostgresUrl(t);
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-test-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return `sqlite:${join(dir, file)}`;
}
