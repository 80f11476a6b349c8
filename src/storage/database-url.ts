// The one reading of a DATABASE_URL: which engine it names and where its database is. The settings check it,
// each engine accepts by it and the CLI names the database from it.
import { resolve } from 'node:path';

export type DatabaseUrl =
  /** `sqlite:PATH` (relative to the working directory; `sqlite:///abs` too) or `sqlite::memory:`; `file` is absolute or `:memory:`. */
  | { engine: 'sqlite'; file: string }
  /** `postgres://` or `postgresql://`, handed to the driver as written. */
  | { engine: 'postgres'; url: string };

/** What `raw` names, or undefined when no engine serves it (a `sqlite:` without a path included). */
export function parseDatabaseUrl(raw: string): DatabaseUrl | undefined {
  if (raw.startsWith('sqlite:')) {
    const path = raw.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
    if (path === '') return undefined;
    return { engine: 'sqlite', file: path === ':memory:' ? path : resolve(path) };
  }
  if (/^postgres(ql)?:\/\//.test(raw)) return { engine: 'postgres', url: raw };
  return undefined;
}
