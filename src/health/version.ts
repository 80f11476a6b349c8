// The package's own version, read once from its package.json (two folders above dist/src/health/ and src/health/).
import { readFileSync } from 'node:fs';

function readVersion(): string {
  for (const candidate of ['../../../package.json', '../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(candidate, import.meta.url), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'plant-store' && typeof pkg.version === 'string') return pkg.version;
    } catch {
      // not this one
    }
  }
  throw new Error('plant-store: cannot find its package.json');
}

export const VERSION: string = readVersion();
