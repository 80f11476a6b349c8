// Commits batches, and the event log's passes, on the write worker (write-worker.ts), started on first use and
// again after it dies. The worker answers in the order it was asked.
import { Worker } from 'node:worker_threads';
import { StoreUnavailableError } from '../errors.js';
import type { PlantWrite, WriteResult } from '../../plants/plant.js';
import type { SequencePass } from '../../events/event-log.js';
import { writeResultsOf, type BatchResults } from './plant-batch.js';
import type { BatchCommitter } from '../batcher.js';
import type { WriterData, WriterReply, WriterRequest } from './write-worker.js';
import { encodeItems } from '../writer-wire.js';

const WORKER_URL = new URL('./write-worker.js', import.meta.url);

export class WorkerCommitter implements BatchCommitter<PlantWrite, WriteResult> {
  private worker?: Worker;
  private ready?: Promise<Worker>;
  private seq = 0;
  private readonly waiting = new Map<number, { resolve: (o: unknown) => void; reject: (e: unknown) => void }>();

  constructor(private readonly data: WriterData) {}

  private start(): Promise<Worker> {
    return (this.ready ??= new Promise<Worker>((resolve, reject) => {
      // No execArgv: the parent's --import hooks and profilers are not the writer's business.
      // A small young generation: the writer allocates little, and the process's V8 flags (the service's 16 MiB
      // semi-spaces) would otherwise give its isolate the same, for resident memory it never uses.
      const worker = new Worker(WORKER_URL, { workerData: this.data, execArgv: [], resourceLimits: { maxYoungGenerationSizeMb: 8 } });
      this.worker = worker;
      worker.on('message', (msg: WriterReply) => {
        if ('ready' in msg) return resolve(worker);
        if ('failed' in msg) return reject(new Error(msg.failed));
        const w = this.waiting.get(msg.seq);
        if (!w) return;
        this.waiting.delete(msg.seq);
        // Idle again, unless closing (close() holds the reference until the writer has exited).
        if (this.waiting.size === 0 && this.worker === worker) worker.unref();
        if (msg.ok) w.resolve(msg.results);
        else w.reject(new StoreUnavailableError(Object.assign(new Error(msg.message), { code: msg.code })));
      });
      const gone = (err: Error) => {
        if (this.worker === worker) (this.worker = undefined), (this.ready = undefined);
        reject(err);
        const waiting = [...this.waiting.values()];
        this.waiting.clear();
        for (const w of waiting) w.reject(new StoreUnavailableError(err));
      };
      worker.on('error', gone);
      worker.on('exit', (code) => gone(new Error(`the write worker exited (code ${code})`)));
      // After the listeners: adding a 'message' listener references the worker's port again. An idle writer
      // never keeps the process alive; commit() references it while a commit is awaited.
      worker.unref();
    }));
  }

  warm(): void {
    // A failure here is reported by the first commit, which starts the worker again.
    this.start().catch(() => {
      this.ready = undefined;
    });
  }

  async commit(items: PlantWrite[]): Promise<WriteResult[]> {
    return writeResultsOf(items, await this.ask<BatchResults>({ items: encodeItems(items) }));
  }

  sequence(maxDeliveries: number, now: number): Promise<SequencePass> {
    return this.ask({ sequence: { maxDeliveries, now } });
  }

  removeOlderThan(cutoff: number, maxEvents: number): Promise<number> {
    return this.ask({ removeOlderThan: { cutoff, maxEvents } });
  }

  private async ask<T>(request: DistributiveOmit<Exclude<WriterRequest, { close: true }>, 'seq'>): Promise<T> {
    const starting = this.start();
    // Keeps the process alive while a request that someone awaits is running, its worker's start included;
    // the last reply unreferences it again.
    this.worker?.ref();
    const worker = await starting.catch((err: unknown) => {
      this.ready = undefined;
      throw new StoreUnavailableError(err);
    });
    return new Promise<T>((resolve, reject) => {
      const seq = ++this.seq;
      this.waiting.set(seq, { resolve: resolve as (o: unknown) => void, reject });
      worker.ref();
      worker.postMessage({ seq, ...request } as WriterRequest);
    });
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

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
