// Making the folders and files of a database, owner-only whatever the umask: they hold token hashes and
// webhook signing secrets.
import { closeSync, constants, existsSync, fchmodSync, fstatSync, mkdirSync, openSync, chmodSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/** Files this service creates: owner read and write only. */
export const FILE_MODE = 0o600;
/** Folders this service creates: owner only. */
export const FOLDER_MODE = 0o700;

/**
 * `mkdir -p`, one folder at a time. Node's recursive mkdir loops for ever, at full CPU and deaf to signals, when
 * a folder cannot be made in a parent that exists and the error is ENOENT (any path under /proc); here each
 * missing folder is tried once and the first failure is thrown. Each folder made here gets `mode` exactly
 * (chmod after mkdir, which the umask narrows).
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
      // Made meanwhile by another process: as good as made here, and its mode is that process's.
      if ((err as { code?: string }).code !== 'EEXIST') throw err;
      continue;
    }
    if (mode !== undefined) chmodSync(folder, mode);
  }
}

/**
 * Creates `path` as a new, empty, owner-only file (0600 whatever the umask): O_EXCL, so neither an existing
 * file nor a link planted at that name is written through (O_NOFOLLOW as well, for systems where O_EXCL
 * alone would follow one), and the result checked to be a regular file. Returns its device and inode, so a
 * caller can check later that the name still holds this file. Throws EEXIST when anything is at `path`.
 */
export function createOwnerOnlyFile(path: string): { dev: number; ino: number } {
  const fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, FILE_MODE);
  try {
    fchmodSync(fd, FILE_MODE);
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new Error(`${path} is not a regular file.`);
    return { dev: stat.dev, ino: stat.ino };
  } finally {
    closeSync(fd);
  }
}
