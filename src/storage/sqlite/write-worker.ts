// The write thread: owns the connection that commits group commits, so the fsync of one batch runs while the
// main thread goes on parsing and validating the next (better-sqlite3 is synchronous; on the main thread a
// commit's fsync stalled every request in flight). Answers each batch with what each write did and found, or the failure.
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { createBatchWriter, type BatchResults } from './plant-batch.js';
import { createEventJobs, type EventJobs } from './event-jobs.js';
import type { SequencePass } from '../../events/event-log.js';
import { decodeItems, type WireItems } from '../writer-wire.js';
import { configureConnection } from './connection-setup.js';

export interface WriterData {
  file: string;
  busyTimeoutMs: number;
}
/** A batch of plant writes, or one of the event log's passes (event-jobs.ts), or the end. */
export type WriterRequest =
  | { seq: number; items: WireItems }
  | { seq: number; sequence: { maxDeliveries: number; now: number } }
  | { seq: number; removeOlderThan: { cutoff: number; maxEvents: number } }
  | { close: true };
export type WriterReply =
  | { seq: number; ok: true; results: BatchResults | SequencePass | number }
  | { seq: number; ok: false; message: string; code: string | undefined }
  | { ready: true }
  | { failed: string };

const { file, busyTimeoutMs } = workerData as WriterData;
const port = parentPort!;
let db: Database.Database;
let write: ReturnType<typeof createBatchWriter>;
let jobs: EventJobs | undefined;
try {
  db = new Database(file, { timeout: busyTimeoutMs });
  // The same durability as the main connection: a commit returns only after the WAL is fsynced.
  configureConnection(db, busyTimeoutMs);
  write = createBatchWriter(db);
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
  let reply: WriterReply;
  try {
    if ('items' in msg) {
      reply = { seq: msg.seq, ok: true, results: write(decodeItems(msg.items)) };
    } else {
      // Prepared on first use: a store migrated by an older version has no event log yet.
      jobs ??= createEventJobs(db);
      reply =
        'sequence' in msg
          ? { seq: msg.seq, ok: true, results: jobs.sequence(msg.sequence.maxDeliveries, msg.sequence.now) }
          : { seq: msg.seq, ok: true, results: jobs.removeOlderThan(msg.removeOlderThan.cutoff, msg.removeOlderThan.maxEvents) };
    }
  } catch (err) {
    reply = { seq: msg.seq, ok: false, message: (err as Error).message, code: (err as { code?: string }).code };
  }
  port.postMessage(reply);
});
