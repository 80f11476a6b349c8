// The two transports to a SQLite writer within one process (a third, from a cluster worker to its primary, is
// process/worker-link.ts): the calling thread's own connection, or the write worker, a thread with its own
// connection, started on first use and again after it dies, answering in the order it was asked. Both ends of the
// write worker are here: this module is also the thread's code (writerThread, run when the thread loads it).
//
// The write thread of a single-process server owns the connection that runs every write command, so the fsync of
// one batch runs while the main thread goes on parsing and validating the next, and no write transaction (a claim,
// an attempt, a subscription) holds the main thread's event loop (better-sqlite3 is synchronous; on the main
// thread a commit's fsync stalled every request in flight).
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { StoreUnavailableError } from '../../errors/store-errors.js';
import type { WireCommand, WireReply, WriteTransport } from '../writer-wire.js';
import { createWriteCommands, runCommand } from './write-commands.js';
import { configureConnection } from './connection-setup.js';
import { PendingReplies } from '../../kit/replies.js';

export interface WriterData {
  file: string;
  busyTimeoutMs: number;
  autoCheckpoint: boolean;
}
/** A command, or the end. */
type WriterRequest = { seq: number; command: WireCommand } | { close: true };
type WriterReply = { seq: number; reply: WireReply } | { ready: true } | { failed: string };
/** What marks a thread started as the write worker. */
type WriterThreadData = { plantStoreWriter: WriterData };

if (!isMainThread && (workerData as Partial<WriterThreadData> | null)?.plantStoreWriter) writerThread((workerData as WriterThreadData).plantStoreWriter);

/** The write worker's side: opens its connection, then runs each command it is sent, in order. */
function writerThread({ file, busyTimeoutMs, autoCheckpoint }: WriterData): void {
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
    return;
  }
  port.on('message', (msg: WriterRequest) => {
    if ('close' in msg) {
      db.close();
      port.close();
      return;
    }
    port.postMessage({ seq: msg.seq, reply: runCommand(commands, msg.command) } satisfies WriterReply);
  });
}

/** Runs each command at once on this connection (an in-memory database, a multi-process server's primary, the CLI). */
export function sameThreadTransport(db: Database.Database): WriteTransport {
  let commands: ReturnType<typeof createWriteCommands> | undefined;
  return {
    send: async (command) => runCommand((commands ??= createWriteCommands(db)), command),
  };
}

export class WorkerTransport implements WriteTransport {
  private worker?: Worker;
  private ready?: Promise<Worker>;
  private readonly replies = new PendingReplies<WireReply>();

  constructor(private readonly data: WriterData) {}

  private start(): Promise<Worker> {
    return (this.ready ??= new Promise<Worker>((resolve, reject) => {
      // No execArgv: the parent's --import hooks and profilers are not the writer's business.
      // A small young generation: the writer allocates little, and the process's V8 flags (the service's 16 MiB
      // semi-spaces) would otherwise give its isolate the same, for resident memory it never uses.
      const worker = new Worker(new URL(import.meta.url), { workerData: { plantStoreWriter: this.data } satisfies WriterThreadData, execArgv: [], resourceLimits: { maxYoungGenerationSizeMb: 8 } });
      this.worker = worker;
      worker.on('message', (msg: WriterReply) => {
        if ('ready' in msg) return resolve(worker);
        if ('failed' in msg) return reject(new Error(msg.failed));
        if (!this.replies.answer(msg.seq, msg.reply)) return;
        // Idle again, unless closing (close() holds the reference until the writer has exited).
        if (this.replies.size === 0 && this.worker === worker) worker.unref();
      });
      const gone = (err: Error) => {
        if (this.worker === worker) (this.worker = undefined), (this.ready = undefined);
        reject(err);
        this.replies.failAll(new StoreUnavailableError(err));
      };
      worker.on('error', gone);
      worker.on('exit', (code) => gone(new Error(`the write worker exited (code ${code})`)));
      // After the listeners: adding a 'message' listener references the worker's port again. An idle writer
      // never keeps the process alive; send() references it while a command is awaited.
      worker.unref();
    }));
  }

  warm(): void {
    // A failure here is reported by the first command, which starts the worker again.
    this.start().catch(() => {
      this.ready = undefined;
    });
  }

  async send(command: WireCommand): Promise<WireReply> {
    const starting = this.start();
    // Keeps the process alive while a command that someone awaits is running, its worker's start included;
    // the last reply unreferences it again.
    this.worker?.ref();
    const worker = await starting.catch((err: unknown) => {
      this.ready = undefined;
      throw new StoreUnavailableError(err);
    });
    return this.replies.ask(
      (seq) => {
        worker.ref();
        worker.postMessage({ seq, command } satisfies WriterRequest);
        return true;
      },
      // postMessage throws rather than returning false; a worker that dies fails what waits (failAll above).
      { fallback: () => { throw new StoreUnavailableError(new Error('the write worker could not be asked')); } },
    );
  }

  async close(): Promise<void> {
    const worker = this.worker;
    if (!worker || !this.ready) return;
    this.worker = undefined;
    this.ready = undefined;
    const exited = new Promise((resolve) => worker.once('exit', resolve));
    // Referenced again, or an otherwise idle process would exit before the writer closed its connection.
    worker.ref();
    worker.postMessage({ close: true } satisfies WriterRequest);
    await exited;
  }
}
