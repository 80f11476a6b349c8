// The main thread's side of the count thread (count-worker.ts): started on the first count (a store that is
// never asked for one costs no thread and no isolate), started again after it dies, ended with the store.
// The count lane (plants/count-lane.ts) sends one count at a time; the channel matches replies anyway.
import { Worker } from 'node:worker_threads';
import type { PlantQuery } from '../../plants/plant.js';
import { StoreUnavailableError } from '../../errors/store-errors.js';
import { ThreadLink } from '../../kit/thread-link.js';
import type { CountData, CountMethods } from './count-worker.js';

const WORKER_URL = new URL('./count-worker.js', import.meta.url);

/** A count that got no reply: the thread failed it, could not be asked, or died. */
function unavailable(_why: unknown, err: Error): never {
  throw new StoreUnavailableError(err);
}

export class CountReader {
  private readonly thread: ThreadLink<CountMethods>;

  constructor(data: CountData) {
    // As the write worker: no execArgv, and a small young generation (a count allocates almost nothing).
    const spawn = () => new Worker(WORKER_URL, { workerData: data, execArgv: [], resourceLimits: { maxYoungGenerationSizeMb: 4 } });
    this.thread = new ThreadLink(spawn, 'the count thread', { fallback: unavailable });
  }

  count(query: PlantQuery): Promise<bigint> {
    return this.thread.request('count', query);
  }

  /** Ends the thread after the count it is running, if any (a SQLite statement cannot be cut short from here). */
  close(): Promise<void> {
    return this.thread.close();
  }
}
