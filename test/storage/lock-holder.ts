// Another process that takes SQLite's write lock on a file, holds it for a while and rolls back: what a
// second writer (the CLI, another instance) does to the service's commits.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import type { TestContext } from 'node:test';

const require = createRequire(import.meta.url);

/** Resolves once the other process holds the lock; it releases it after `ms`. */
export async function holdWriteLock(t: TestContext, file: string, ms: number): Promise<void> {
  const holder = spawn(
    process.execPath,
    ['-e', `const D = require(${JSON.stringify(require.resolve('better-sqlite3'))}); const db = new D(${JSON.stringify(file)});
      db.exec('BEGIN IMMEDIATE'); process.stdout.write('locked\\n');
      setTimeout(() => { db.exec('ROLLBACK'); db.close(); }, ${ms});`],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  t.after(() => holder.kill('SIGKILL'));
  await new Promise<void>((resolve) => holder.stdout.on('data', (d: Buffer) => d.toString().includes('locked') && resolve()));
}
