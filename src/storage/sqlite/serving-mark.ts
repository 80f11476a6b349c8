// Which keys a server running on a SQLite file holds, for `plant-store secrets rotate` run beside it: the
// server writes them, at start, into a file next to the database (`.NAME-serving`, owner-only); another process
// believes it only while the database is held open by someone, the lock `restore` checks as well, so a mark
// left by a server killed with -9 is never taken for a running one.
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { setTimeout } from 'node:timers/promises';
import Database from 'better-sqlite3';
import type { RunningServer } from '../store.js';
import { takeExclusive } from './sqlite-backup.js';

interface Mark {
  pid: number;
  keyIds: string[];
}

function markPath(file: string): string {
  return join(dirname(file), `.${basename(file)}-serving`);
}

/** Written by the process that serves `file`; replaced whole (a reader never sees half of it). Returns its removal. */
export function writeServingMark(file: string, keyIds: readonly string[]): () => void {
  const path = markPath(file);
  const partial = `${path}.${process.pid}`;
  writeFileSync(partial, JSON.stringify({ pid: process.pid, keyIds: [...keyIds] } satisfies Mark) + '\n', { mode: 0o600 });
  renameSync(partial, path);
  return () => removeServingMark(file);
}

/** Removed when that process closes the store, unless another server has written its own since. */
function removeServingMark(file: string): void {
  if (readMark(file)?.pid === process.pid) rmSync(markPath(file), { force: true });
}

function readMark(file: string): Mark | undefined {
  try {
    const mark = JSON.parse(readFileSync(markPath(file), 'utf8')) as Partial<Mark>;
    if (typeof mark.pid !== 'number' || !Array.isArray(mark.keyIds) || !mark.keyIds.every((id) => typeof id === 'string')) return undefined;
    return { pid: mark.pid, keyIds: mark.keyIds };
  } catch {
    return undefined;
  }
}

/** Whether another process holds `file` open (the lock restore checks: sqlite-backup.ts takeExclusive). */
function heldOpen(file: string): boolean {
  let db: Database.Database;
  try {
    db = new Database(file, { fileMustExist: true, timeout: 0 });
  } catch {
    return false;
  }
  try {
    if (!takeExclusive(db)) return true;
    db.exec('COMMIT');
    return false;
  } finally {
    db.close();
  }
}

/** Whether the process that wrote a mark still runs (one killed with -9 left its mark behind). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as { code?: string }).code === 'EPERM';
  }
}

/** How long a holder without a mark may take to let go before it counts as a server: a command's open is short. */
const COMMAND_GRACE_MS = 3_000;

/**
 * The server running on `file`, if any: its keys from its mark. A holder without one is another command (it
 * soon lets go) or a server of a version that did not mark (its keys unknown).
 */
export async function runningOnFile(file: string): Promise<RunningServer[]> {
  const until = Date.now() + COMMAND_GRACE_MS;
  while (heldOpen(file)) {
    const mark = readMark(file);
    if (mark && alive(mark.pid)) return [{ where: `process ${mark.pid}`, keyIds: mark.keyIds }];
    if (Date.now() >= until) return [{ where: 'another process that has held the file open for seconds (a server that does not say its keys, or a long command)' }];
    await setTimeout(100);
  }
  return [];
}
