// What a settings row is, and the parsers rows share. Each part declares the rows of its own settings (an engine,
// replication, a feature); config.ts joins them, reads them from the environment and is the only reader of it.
// A row is data and a parse function: a parse throws an Error whose message says what is wrong with the value.

/** One environment variable: the Config key it sets, its default, and how its text becomes the value. */
export interface SettingRow<S, K extends keyof S = keyof S> {
  key: K;
  env: string;
  description: string;
  default: S[K];
  parse: (raw: string) => S[K];
  secret?: boolean;
  /** How `plant-store config` prints the value, when not as is. */
  show?: (value: S[K]) => string;
}

/** Rows of the settings `S`, each typed by its own key. */
export type SettingRows<S> = ReadonlyArray<{ [K in keyof S]-?: SettingRow<S, K> }[keyof S]>;

export function integer(min: number, max: number) {
  return (raw: string): number => {
    if (!/^\d+$/.test(raw.trim())) throw new Error(`expected a whole number, got "${raw}"`);
    const n = Number(raw.trim());
    if (n < min || n > max) throw new Error(`expected a number from ${min} to ${max}, got ${n}`);
    return n;
  };
}

export function boolean(raw: string): boolean {
  const v = raw.trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(v)) return true;
  if (['0', 'false', 'no', 'off'].includes(v)) return false;
  throw new Error(`expected true or false, got "${raw}"`);
}
