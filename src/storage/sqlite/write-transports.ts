// The transport to the write worker, a thread with its own connection, started on first use and again after it
// dies, answering in the order it was asked (a writer on the calling thread needs none: sqlite-role.ts; a cluster
// worker's writes go to its primary: process/worker-link.ts). Both ends of the write worker are here: this
// module is also the thread's code (writerThread, run when the thread loads it).
//
// The write thread of a single-process server owns the connection that runs every write command, so the fsync of
// one batch runs while the main thread goes on parsing and validating the next, and no write transaction (a claim,
// an attempt, a subscription) holds the main thread's event loop (better-sqlite3 is synchronous; on the main
// thread a commit's fsync stalled every request in flight).
import { isMainThread, Worker, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { StoreUnavailableError } from '../../errors/store-errors.js';
import type { WireCommand, WireReply, WriteTransport } from '../writer-wire.js';
import { createWriteCommands, runCommand } from './write-commands.js';
import { configureConnection } from './connection-setup.js';
import { answerParent, ThreadLink } from '../../kit/thread-link.js';

export interface WriterData {
  file: string;
  busyTimeoutMs: number;
  autoCheckpoint: boolean;
}
/** What the write worker answers. */
type WriterMethods = { run(command: WireCommand): WireReply; close(): void };
/** What marks a thread started as the write worker. */
type WriterThreadData = { plantStoreWriter: WriterData };

if (!isMainThread && (workerData as Partial<WriterThreadData> | null)?.plantStoreWriter) writerThread((workerData as WriterThreadData).plantStoreWriter);

/** The write worker's side: opens its connection, then runs each command it is sent, in order. */
function writerThread({ file, busyTimeoutMs, autoCheckpoint }: WriterData): void {
  answerParent<WriterMethods>(() => {
    const db = new Database(file, { timeout: busyTimeoutMs });
    // The same durability as the main connection: a commit returns only after the WAL is fsynced.
    configureConnection(db, busyTimeoutMs, autoCheckpoint);
    // Started once the store is migrated: the plant writes' statements are prepared now, the others on first use.
    const commands = createWriteCommands(db, { ready: true });
    return {
      run: (command) => runCommand(commands, command),
      close: () => {
        db.close();
      },
    };
  });
}

/** A command that got no reply: the worker could not be asked, or died (it is started again on the next). */
function unavailable(_why: unknown, err: Error): never {
  throw new StoreUnavailableError(err);
}

export class WorkerTransport implements WriteTransport {
  private readonly thread: ThreadLink<WriterMethods>;

  constructor(data: WriterData) {
    // No execArgv: the parent's --import hooks and profilers are not the writer's business.
    // A small young generation: the writer allocates little, and the process's V8 flags (the service's 16 MiB
    // semi-spaces) would otherwise give its isolate the same, for resident memory it never uses.
    const spawn = () => new Worker(new URL(import.meta.url), { workerData: { plantStoreWriter: data } satisfies WriterThreadData, execArgv: [], resourceLimits: { maxYoungGenerationSizeMb: 8 } });
    this.thread = new ThreadLink(spawn, 'the write worker', { fallback: unavailable });
  }

  warm(): void {
    this.thread.warm();
  }

  send(command: WireCommand): Promise<WireReply> {
    return this.thread.request('run', command);
  }

  close(): Promise<void> {
    return this.thread.close();
  }
}
