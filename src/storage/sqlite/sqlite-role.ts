// Who writes a SQLite store's database, decided once when the store opens (SqliteStore) from its options; every
// write of the store goes where its role says. One writer runs every write, as a command (write-commands.ts).
import type Database from 'better-sqlite3';
import type { SharedWriter } from '../store.js';
import type { PlantWrite } from '../../plants/plant.js';
import type { WriteOutcome } from '../plant-writes.js';
import { Batcher } from '../batcher.js';
import { tracing } from '../../tracing/tracing-switch.js';
import { decodeItems, encodeOutcomes, firstTrace, splitOutcomes, wireItemCount, type WireItems, type WireOutcomes, type WriteTransport } from '../writer-wire.js';
import { sameThreadWriter, type SameThreadWriter } from './write-commands.js';
import type { BatchTiming } from './sqlite-plant-writes.js';
import { WorkerTransport } from './write-transports.js';

/** The options that decide the role. */
export interface WriterOptions {
  /** How long a write waits for another process's lock (the CLI) before failing. */
  busyTimeoutMs?: number;
  /**
   * Every write goes to this writer (the primary process of a multi-process server) instead of a write worker
   * of this process, which then neither sequences events nor removes old ones: the writer does.
   */
  sharedWriter?: SharedWriter;
  /**
   * Write on this connection, on the calling thread, instead of a write worker: for a process that does little
   * but write (a multi-process server's primary, whose commits of every worker's plant batches join one group
   * commit: serveWrite), where the thread's two hops per commit cost more than the fsync it keeps off the event
   * loop, and for the CLI.
   */
  commitOnThisThread?: boolean;
  /** False leaves checkpoints to Litestream, which replicates the file (REPLICA_URL). */
  autoCheckpoint?: boolean;
}

export type SqliteRole =
  /** This connection writes, on the calling thread; nothing else can: a database in memory exists on it only. */
  | { kind: 'alone'; writer: SameThreadWriter }
  /**
   * This connection writes the file, on the calling thread (commitOnThisThread), for this process and for those
   * that send it their writes (serveWrite): a multi-process server's primary, whose workers' plant batches of one
   * turn join one group commit (`served`); the CLI's commands are the same writer, sent nothing.
   */
  | { kind: 'primary'; writer: SameThreadWriter; served: Batcher<WireItems, WireOutcomes> }
  /**
   * This process's write worker writes the file: a thread with its own connection (write-transports.ts), so that
   * no fsync or lock wait blocks the event loop. This connection only reads.
   */
  | { kind: 'write-worker'; transport: WriteTransport }
  /**
   * Another process writes for this one (a cluster worker's primary), and sequences and removes its events,
   * reports its commits and marks the file. This connection only reads.
   */
  | { kind: 'follower'; transport: SharedWriter };

/** The role the options give: a shared writer first, then a database in memory, then commitOnThisThread. */
export function decideRole(file: string, db: Database.Database, options: WriterOptions): SqliteRole {
  if (options.sharedWriter) return { kind: 'follower', transport: options.sharedWriter };
  if (file === ':memory:') return { kind: 'alone', writer: sameThreadWriter(db) };
  if (options.commitOnThisThread) {
    const writer = sameThreadWriter(db);
    return { kind: 'primary', writer, served: servedBatches(writer) };
  }
  return { kind: 'write-worker', transport: new WorkerTransport({ file, busyTimeoutMs: options.busyTimeoutMs ?? 5_000, autoCheckpoint: options.autoCheckpoint ?? true }) };
}

/** Whether this connection is the writer (otherwise it only reads). */
export function writesHere(role: SqliteRole): role is Extract<SqliteRole, { writer: SameThreadWriter }> {
  return role.kind === 'alone' || role.kind === 'primary';
}

/**
 * A batch of plant writes on this thread's writer, on the writes as they are. With tracing on it is timed, and
 * its statements (BEGIN IMMEDIATE included) and its COMMIT (the WAL write and fsync) become spans under the
 * running commit span.
 */
export function plantsHere(writer: SameThreadWriter, items: readonly PlantWrite[]): WriteOutcome[] {
  if (!tracing.on) return writer.plants(items);
  const { outcomes, timing } = writer.plantsTimed(items);
  recordBatchSpans(timing);
  return outcomes;
}

/** The spans of a timed batch (write-commands.ts plantsTimed), wherever it ran. */
export function recordBatchSpans(timing: BatchTiming): void {
  tracing.record('sqlite statements', timing.began, timing.written, SQLITE_SPAN);
  tracing.record('sqlite commit', timing.written, timing.committed, SQLITE_SPAN);
}

/** What a batch's spans say of where they ran (OpenTelemetry's database convention). */
const SQLITE_SPAN = { 'db.system.name': 'sqlite' };

/** Plant batches other processes sent (serveWrite), in their wire form: each turn's join one group commit. */
function servedBatches(writer: SameThreadWriter): Batcher<WireItems, WireOutcomes> {
  return new Batcher(
    { commit: async (batches) => splitOutcomes(batches, encodeOutcomes(plantsHere(writer, decodeItems(joined(batches))))) },
    1,
    wireItemCount,
    firstTrace,
  );
}

/** Plant batches as one: the wire form is flat, so batches join end to end. */
function joined(batches: readonly WireItems[]): WireItems {
  const all: WireItems = [];
  for (const b of batches) for (const v of b) all.push(v);
  return all;
}
