// The write half of the plant port for every engine: creates, replaces, patches and deletes go through the engine's
// group commit (batcher.ts), whose batches plants/plant-batch.ts writes and decides. An engine supplies the batcher.
import type { ChangeOutcome, CreateOutcome, PatchOutcome, PlantPatch, PlantRecord, PlantWrite } from '../plants/plant.js';
import type { WriteOutcome } from '../plants/plant-batch.js';
import type { Batcher } from './batcher.js';
import { StoreUnavailableError } from './errors.js';
import type { CommitObserver } from './store.js';
import { traceText } from '../tracing/spans.js';
import { tracing } from '../tracing/tracing-switch.js';

export abstract class GroupCommittedPlants {
  /** The engine's group commit of plant writes. */
  protected abstract readonly groupCommit: Batcher<PlantWrite, WriteOutcome>;
  /** Set once the store is closing: new work is refused (the group commit still commits what it accepted). */
  protected abstract closed: boolean;

  /**
   * Every engine closes in this order: new work is refused, every write already accepted is committed and
   * answered, then the engine stops what it runs in the background and closes its connections (release).
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.groupCommit.close();
    await this.release();
  }

  /** Stops what the engine runs in the background and closes its connections, once the writes are in. */
  protected abstract release(): Promise<void>;

  // The batch decides each write's outcome in its transaction (plants/plant-batch.ts), by the write's kind.
  createPlant(plant: PlantRecord): Promise<CreateOutcome> {
    return this.write({ op: 'create', plant }) as Promise<CreateOutcome>;
  }

  replacePlant(plant: PlantRecord, ifVersion?: bigint): Promise<ChangeOutcome> {
    return this.write({ op: 'replace', plant, ifVersion }) as Promise<ChangeOutcome>;
  }

  deletePlant(id: bigint, ifVersion?: bigint): Promise<ChangeOutcome> {
    return this.write({ op: 'delete', id, ifVersion }) as Promise<ChangeOutcome>;
  }

  patchPlant(id: bigint, patch: PlantPatch, ifVersions?: readonly bigint[]): Promise<PatchOutcome> {
    return this.write({ op: 'patch', id, patch, ifVersions }) as Promise<PatchOutcome>;
  }

  addCommitObserver(observer: CommitObserver): () => void {
    return this.groupCommit.observe(observer);
  }

  private write(item: PlantWrite): Promise<WriteOutcome> {
    if (this.closed) return Promise.reject(new StoreUnavailableError(new Error('store closed')));
    if (tracing.on) {
      // The request's trace goes with the write to whichever process commits it, and into its event.
      const trace = tracing.current();
      if (trace) item.trace = traceText(trace);
    }
    return this.groupCommit.submit(item);
  }
}
