// What both engines decide the same way before migrating.
import type { MigrationResult } from './store.js';

/**
 * A database migrated by a newer build (it holds versions this build does not know) must not be touched:
 * the failed result to report, or undefined when every applied version is known.
 */
export function newerThanBuild(applied: ReadonlySet<number>, known: readonly { version: number }[]): MigrationResult | undefined {
  const versions = new Set(known.map((m) => m.version));
  const unknown = [...applied].filter((v) => !versions.has(v));
  if (unknown.length === 0) return undefined;
  const newest = Math.max(...unknown);
  return { version: newest, name: 'unknown', status: 'failed', error: `the database has migration ${newest}, newer than this build knows; upgrade plant-store` };
}
