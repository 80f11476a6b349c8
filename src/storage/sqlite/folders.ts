// Making the folders of a database file.
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/**
 * `mkdir -p`, one folder at a time. Node's recursive mkdir loops for ever, at full CPU and deaf to signals, when
 * a folder cannot be made in a parent that exists and the error is ENOENT (any path under /proc); here each
 * missing folder is tried once and the first failure is thrown.
 */
export function makeFolders(dir: string, mode?: number): void {
  const missing: string[] = [];
  for (let at = resolve(dir); !existsSync(at); at = dirname(at)) {
    missing.push(at);
    if (dirname(at) === at) break;
  }
  for (const folder of missing.reverse()) {
    try {
      mkdirSync(folder, { mode });
    } catch (err) {
      // Made meanwhile by another process: as good as made here.
      if ((err as { code?: string }).code !== 'EEXIST') throw err;
    }
  }
}
