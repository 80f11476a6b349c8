// The engines this build has. Nothing outside storage/ names an engine or imports its folder: the settings (its
// DATABASE_URL check, the rows each engine adds), the CLI (naming a database, backup and restore), serve
// (replication) and open-store.ts ask this list. A new engine is its folder, which exports its Engine object,
// and its entry here.
import type { Engine } from './store.js';
import type { EngineTools } from './engine-tools.js';
import type { SettingRows } from '../kit/settings.js';
import { sqliteEngine } from './sqlite/sqlite-engine.js';
import { postgresEngine } from './postgres/pg-engine.js';

const ENGINES = [sqliteEngine, postgresEngine] as const;

/** The DATABASE_URL when none is set: a file under ./data/ of the working directory. */
export const DEFAULT_DATABASE_URL = 'sqlite:./data/plant-store.db';

type OptionsOf<E> = E extends Engine<infer O> ? O : never;
type SettingsOf<E> = E extends EngineTools<infer S> ? S : never;
type Intersection<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void ? I : never;

/** Options of every engine (each reads its own). */
export type EnginesOptions = Intersection<OptionsOf<(typeof ENGINES)[number]>>;

/** Settings of every engine (Config has them all; each engine reads its own). */
export type EnginesSettings = Intersection<SettingsOf<(typeof ENGINES)[number]>>;

/** An engine as the rest of the service sees it: its store, and its settings and tools. */
export type AnyEngine = Engine<EnginesOptions> & EngineTools<EnginesSettings>;

/** Every engine, in the order the settings name them. */
export const engines: readonly AnyEngine[] = ENGINES;

/** The engine that serves `databaseUrl`, or undefined when none does. */
export function engineFor(databaseUrl: string): AnyEngine | undefined {
  return engines.find((e) => e.accepts(databaseUrl));
}

/** The engine that serves `databaseUrl`; throws when none does (the settings refuse such a URL first). */
export function engineOf(databaseUrl: string): AnyEngine {
  const engine = engineFor(databaseUrl);
  if (!engine) throw new Error(`unsupported DATABASE_URL scheme: ${databaseUrl.split(':')[0]}`);
  return engine;
}

/** The database's file on this machine; undefined for a database server's or one in memory. */
export function databaseFile(databaseUrl: string): string | undefined {
  const local = engineOf(databaseUrl).localFile(databaseUrl);
  return local && 'file' in local ? local.file : undefined;
}

/** The settings rows every engine adds, in the engines' order. */
export const ENGINE_SETTINGS: SettingRows<EnginesSettings> = engines.flatMap((e) => e.settings);
