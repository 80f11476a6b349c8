// The group-commit queue: creates that arrive while a commit is running wait for the next one, so one fsync
// serves them all, and at most one batch is committing at a time (the next is built meanwhile). How a batch
// is committed is the committer's business (the write worker, or the main thread for :memory:).
import { StoreUnavailableError } from '../errors.js';
import type { CreateItem, ItemOutcome } from './create-batch.js';

export interface BatchCommitter {
  /** Commits the batch durably and resolves with each item's outcome; rejects when nothing was committed. */
  commit(items: CreateItem[]): Promise<ItemOutcome[]>;
  close(): Promise<void>;
  /** Gets ready for the first commit ahead of time (starts the worker); optional. */
  warm?(): void;
}

interface Waiting {
  item: CreateItem;
  resolve: (outcome: ItemOutcome) => void;
  reject: (err: unknown) => void;
}

/** A bound on one transaction, so a burst becomes several commits and no single one grows without limit. */
export const MAX_BATCH = 2_000;

export class GroupCommit {
  private pending: Waiting[] = [];
  private committing = false;
  private scheduled = false;
  private idle: (() => void)[] = [];

  constructor(
    private readonly committer: BatchCommitter,
    private readonly observe: (size: number, started: number, ok: boolean) => void,
  ) {}

  submit(item: CreateItem): Promise<ItemOutcome> {
    return new Promise((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      if (!this.committing && !this.scheduled) {
        this.scheduled = true;
        // Everything that arrives in this turn of the event loop joins the first commit.
        setImmediate(() => {
          this.scheduled = false;
          this.next();
        });
      }
    });
  }

  private next(): void {
    if (this.committing) return;
    if (this.pending.length === 0) {
      for (const done of this.idle.splice(0)) done();
      return;
    }
    const batch = this.pending.length <= MAX_BATCH ? this.pending : this.pending.slice(0, MAX_BATCH);
    this.pending = this.pending.length <= MAX_BATCH ? [] : this.pending.slice(MAX_BATCH);
    this.committing = true;
    const started = performance.now();
    const items = new Array<CreateItem>(batch.length);
    for (let i = 0; i < batch.length; i++) items[i] = batch[i]!.item;
    this.committer.commit(items).then(
      (outcomes) => {
        this.observe(batch.length, started, true);
        for (let i = 0; i < batch.length; i++) batch[i]!.resolve(outcomes[i]!);
        this.done();
      },
      (err: unknown) => {
        this.observe(batch.length, started, false);
        const failure = err instanceof StoreUnavailableError ? err : new StoreUnavailableError(err);
        for (const w of batch) w.reject(failure);
        this.done();
      },
    );
  }

  private done(): void {
    this.committing = false;
    // What arrived during the commit goes at once: it has already waited one commit.
    this.next();
  }

  /** Readies the committer now, so the first create does not also wait for a thread to start. */
  warm(): void {
    this.committer.warm?.();
  }

  /** Resolves once every create submitted so far is answered. */
  drain(): Promise<void> {
    if (!this.committing && this.pending.length === 0 && !this.scheduled) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  async close(): Promise<void> {
    await this.drain();
    await this.committer.close();
  }
}
