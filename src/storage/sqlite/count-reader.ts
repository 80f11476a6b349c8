// The main thread's side of the count thread (count-worker.ts): started on the first count (a store that is
// never asked for one costs no thread and no isolate), started again after it dies, ended with the store.
// The count lane (plants/count-lane.ts) sends one count at a time; replies are matched by sequence anyway.
import { Worker } from 'node:worker_threads';
import type { PlantQuery } from '../../plants/plant.js';
import { StoreUnavailableError } from '../../errors/store-errors.js';
import type { CountData, CountReply, CountRequest } from './count-worker.js';

const WORKER_URL = new URL('./count-worker.js', import.meta.url);

export class CountReader {
  private worker?: Worker;
  private ready?: Promise<Worker>;
  private seq = 0;
  private readonly waiting = new Map<number, { resolve: (n: bigint) => void; reject: (e: unknown) => void }>();

  constructor(private readonly data: CountData) {}

  private start(): Promise<Worker> {
    return (this.ready ??= new Promise<Worker>((resolve, reject) => {
      // As the write worker: no execArgv, and a small young generation (a count allocates almost nothing).
      const worker = new Worker(WORKER_URL, { workerData: this.data, execArgv: [], resourceLimits: { maxYoungGenerationSizeMb: 4 } });
      this.worker = worker;
      worker.on('message', (msg: CountReply) => {
        if ('ready' in msg) return resolve(worker);
        if ('failed' in msg) return reject(new Error(msg.failed));
        const w = this.waiting.get(msg.seq);
        if (!w) return;
        this.waiting.delete(msg.seq);
        if (this.waiting.size === 0 && this.worker === worker) worker.unref();
        if ('error' in msg) w.reject(new StoreUnavailableError(new Error(msg.error)));
        else w.resolve(msg.n);
      });
      const gone = (err: Error) => {
        if (this.worker === worker) (this.worker = undefined), (this.ready = undefined);
        reject(err);
        const waiting = [...this.waiting.values()];
        this.waiting.clear();
        for (const w of waiting) w.reject(new StoreUnavailableError(err));
      };
      worker.on('error', gone);
      worker.on('exit', (code) => gone(new Error(`the count thread exited (code ${code})`)));
      // An idle count thread never keeps the process alive; count() references it while one is awaited.
      worker.unref();
    }));
  }

  async count(query: PlantQuery): Promise<bigint> {
    const starting = this.start();
    this.worker?.ref();
    const worker = await starting.catch((err: unknown) => {
      this.ready = undefined;
      throw new StoreUnavailableError(err);
    });
    return new Promise<bigint>((resolve, reject) => {
      const seq = ++this.seq;
      this.waiting.set(seq, { resolve, reject });
      worker.ref();
      worker.postMessage({ seq, query } satisfies CountRequest);
    });
  }

  /** Ends the thread after the count it is running, if any (a SQLite statement cannot be cut short from here). */
  async close(): Promise<void> {
    const worker = this.worker;
    const ready = this.ready;
    if (!worker || !ready) return;
    this.worker = undefined;
    this.ready = undefined;
    const exited = new Promise((resolve) => worker.once('exit', resolve));
    worker.ref();
    // A thread still opening its connection reads the message once it has.
    worker.postMessage({ close: true } satisfies CountRequest);
    await exited;
  }
}
