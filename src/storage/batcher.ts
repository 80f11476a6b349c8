// Group commit for every engine: what arrives in one turn of the event loop joins one commit, what arrives
// while a commit runs waits for it and goes in the next one together, so one fsync (or one COMMIT round
// trip) serves them all and (unless the committer is a writer elsewhere) at most one batch is committing at a time. How a batch is committed is the
// engine's committer; every commit is reported as a `commit` observation (metrics count them).
import type { Observer } from '../observations/observations.js';
import { asStoreError } from '../errors/store-errors.js';
import { traceFromText, type TraceHeaders } from '../tracing/spans.js';
import { tracing } from '../tracing/tracing-switch.js';

export interface BatchCommitter<I, O> {
  /** Commits the batch durably and resolves with each item's outcome, in order; rejects when nothing was committed. */
  commit(items: I[]): Promise<O[]>;
  /** Gets ready for the first commit ahead of time (starts a worker); optional. */
  warm?(): void;
  close?(): Promise<void>;
}

interface Waiting<I, O> {
  item: I;
  resolve: (outcome: O) => void;
  reject: (err: unknown) => void;
  /** With tracing on: the submitting write's trace, and when it was submitted (performance.now()). */
  trace?: TraceHeaders;
  at?: number;
}

/** The traces one commit span links to at most (beyond its parent): a big batch serves many requests. */
const MAX_LINKS = 32;

/** A bound on one transaction, so a burst becomes several commits and no single one grows without limit. */
export const MAX_BATCH = 2_000;

export class Batcher<I, O> {
  private pending: Waiting<I, O>[] = [];
  /** Batches handed to the committer and not yet answered. */
  private committing = 0;
  private scheduled = false;
  private idle: (() => void)[] = [];
  private readonly observers = new Set<Observer>();

  /**
   * `maxInFlight`: batches the committer may hold at once. One for a committer that commits (the next batch
   * gathers what arrives meanwhile); more for one that hands batches on to a writer that groups them itself
   * (a multi-process server's primary), where waiting for each answer would add a round trip to every write.
   */
  constructor(
    private readonly committer: BatchCommitter<I, O>,
    private readonly maxInFlight = 1,
    /** How many writes an item holds, for the observers (an item may be a whole batch another process sent). */
    private readonly weigh?: (item: I) => number,
    /**
     * The trace context an item carries from the request that wrote it (tracing/spans.ts traceText). Given, each
     * commit is a span of the first traced item's trace (plant writes); without it, no span.
     */
    private readonly traceOf?: (item: I) => string | undefined,
    /** The commit span's name (a worker's hand-over to the shared writer has its own). */
    private readonly spanName = 'commit',
  ) {}

  submit(item: I): Promise<O> {
    return new Promise((resolve, reject) => {
      this.pending.push(this.traceOf && tracing.on ? { item, resolve, reject, trace: traceFromText(this.traceOf(item)), at: performance.now() } : { item, resolve, reject });
      if (this.committing < this.maxInFlight && !this.scheduled) {
        this.scheduled = true;
        setImmediate(() => {
          this.scheduled = false;
          this.next();
        });
      }
    });
  }

  /** Reports every commit to `observer` from now on; returns its removal. */
  observe(observer: Observer): () => void {
    this.observers.add(observer);
    return () => this.observers.delete(observer);
  }

  private next(): void {
    if (this.committing >= this.maxInFlight) return;
    if (this.pending.length === 0) {
      if (this.committing === 0) for (const done of this.idle.splice(0)) done();
      return;
    }
    const batch = this.pending.length <= MAX_BATCH ? this.pending : this.pending.slice(0, MAX_BATCH);
    this.pending = this.pending.length <= MAX_BATCH ? [] : this.pending.slice(MAX_BATCH);
    this.committing++;
    const started = performance.now();
    const items = new Array<I>(batch.length);
    for (let i = 0; i < batch.length; i++) items[i] = batch[i]!.item;
    const size = this.weigh ? items.reduce((n, item) => n + this.weigh!(item), 0) : batch.length;
    const span = this.traceOf && tracing.on ? commitSpan(this.spanName, batch, size, started) : undefined;
    // Inside its span, so the statements' spans (PostgreSQL) are its children.
    (span ? tracing.within(span, () => this.committer.commit(items)) : this.committer.commit(items)).then(
      (outcomes) => {
        span?.end();
        this.notify(size, started, true);
        for (let i = 0; i < batch.length; i++) batch[i]!.resolve(outcomes[i]!);
        this.done();
      },
      (err: unknown) => {
        span?.fail(err);
        span?.end();
        this.notify(size, started, false);
        const failure = asStoreError(err);
        for (const w of batch) w.reject(failure);
        this.done();
      },
    );
  }

  private notify(size: number, started: number, ok: boolean): void {
    if (this.observers.size === 0) return;
    const seconds = (performance.now() - started) / 1_000;
    for (const observer of this.observers) {
      try {
        observer({ kind: 'commit', size, seconds, ok });
      } catch {
        // An observer never disturbs a commit.
      }
    }
  }

  private done(): void {
    this.committing--;
    // What arrived during the commit goes at once: it has already waited one commit.
    this.next();
  }

  /** Readies the committer now, so the first item does not also wait for a thread to start. */
  warm(): void {
    this.committer.warm?.();
  }

  /** Resolves once every item submitted so far is answered. */
  drain(): Promise<void> {
    if (this.committing === 0 && this.pending.length === 0 && !this.scheduled) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  /** Answers everything submitted, then closes the committer. */
  async close(): Promise<void> {
    await this.drain();
    await this.committer.close?.();
  }
}

/**
 * The span of one group commit: a child of the first traced write it holds, linked to the others' traces; its
 * length is the commit's (the fsync or the COMMIT round trip included), and it says how long the oldest write waited.
 */
function commitSpan<I, O>(name: string, batch: readonly Waiting<I, O>[], size: number, started: number) {
  let parent: TraceHeaders | undefined;
  const links: TraceHeaders[] = [];
  let oldest = started;
  for (const w of batch) {
    if (w.at !== undefined && w.at < oldest) oldest = w.at;
    if (!w.trace) continue;
    if (!parent) parent = w.trace;
    else if (links.length < MAX_LINKS && w.trace.traceparent.slice(3, 35) !== parent.traceparent.slice(3, 35)) links.push(w.trace);
  }
  if (!parent) return undefined;
  return tracing.start(name, { 'plant_store.commit.size': size, 'plant_store.commit.wait_ms': Math.round((started - oldest) * 1000) / 1000 }, parent, links);
}
