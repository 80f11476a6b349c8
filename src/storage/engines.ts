// The engines this build has: the one place outside their folders that names them. The settings' check of
// DATABASE_URL, the CLI's naming of a database and open-store.ts all go through this list. A new engine is its
// folder, which exports its Engine object, and its entry here.
import type { Engine } from './store.js';
import { sqliteEngine } from './sqlite/sqlite-engine.js';
import { postgresEngine } from './postgres/pg-engine.js';

const ENGINES = [sqliteEngine, postgresEngine] as const;

/** The DATABASE_URL when none is set: a file under ./data/ of the working directory. */
export const DEFAULT_DATABASE_URL = 'sqlite:./data/plant-store.db';

type OptionsOf<E> = E extends Engine<infer O> ? O : never;
type Intersection<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void ? I : never;

/** Options of every engine (each reads its own). */
export type EnginesOptions = Intersection<OptionsOf<(typeof ENGINES)[number]>>;

/** Every engine, in the order the settings name them. */
export const engines: readonly Engine<EnginesOptions>[] = ENGINES;

/** The engine that serves `databaseUrl`, or undefined when none does. */
export function engineFor(databaseUrl: string): Engine<EnginesOptions> | undefined {
  return engines.find((e) => e.accepts(databaseUrl));
}

/** The engine that serves `databaseUrl`; throws when none does (the settings refuse such a URL first). */
export function engineOf(databaseUrl: string): Engine<EnginesOptions> {
  const engine = engineFor(databaseUrl);
  if (!engine) throw new Error(`unsupported DATABASE_URL scheme: ${databaseUrl.split(':')[0]}`);
  return engine;
}

/** The database's file on this machine; undefined for a database server's or one in memory. */
export function databaseFile(databaseUrl: string): string | undefined {
  const local = engineOf(databaseUrl).localFile(databaseUrl);
  return local && 'file' in local ? local.file : undefined;
}
