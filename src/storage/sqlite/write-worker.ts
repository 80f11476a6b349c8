// The write thread of a single-process server: owns the connection that runs every write command
// (write-commands.ts), so the fsync of one batch runs while the main thread goes on parsing and validating the
// next, and no write transaction (a claim, an attempt, a subscription) holds the main thread's event loop
// (better-sqlite3 is synchronous; on the main thread a commit's fsync stalled every request in flight).
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import type { WireCommand, WireReply } from '../writer-wire.js';
import { createWriteCommands, runCommand } from './write-commands.js';
import { configureConnection } from './connection-setup.js';

export interface WriterData {
  file: string;
  busyTimeoutMs: number;
  autoCheckpoint: boolean;
}
/** A command, or the end. */
export type WriterRequest = { seq: number; command: WireCommand } | { close: true };
export type WriterReply = { seq: number; reply: WireReply } | { ready: true } | { failed: string };

const { file, busyTimeoutMs, autoCheckpoint } = workerData as WriterData;
const port = parentPort!;
let db: Database.Database;
let commands: ReturnType<typeof createWriteCommands>;
try {
  db = new Database(file, { timeout: busyTimeoutMs });
  // The same durability as the main connection: a commit returns only after the WAL is fsynced.
  configureConnection(db, busyTimeoutMs, autoCheckpoint);
  // Started once the store is migrated: the plant writes' statements are prepared now, the others on first use.
  commands = createWriteCommands(db, { ready: true });
  port.postMessage({ ready: true } satisfies WriterReply);
} catch (err) {
  port.postMessage({ failed: (err as Error).message } satisfies WriterReply);
  port.close();
}

port.on('message', (msg: WriterRequest) => {
  if ('close' in msg) {
    db.close();
    port.close();
    return;
  }
  port.postMessage({ seq: msg.seq, reply: runCommand(commands, msg.command) } satisfies WriterReply);
});
