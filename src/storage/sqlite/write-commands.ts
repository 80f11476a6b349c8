// Every write to a SQLite file, as named commands run by its one writer (one connection, one thread): each is a
// function of the writer's connection and plain arguments (what structured clone and the cluster's v8
// serialization carry: bigints and Dates included), runs in one transaction, and returns rows in the engine's
// form, which the caller turns into records. The rules are the features' (plants/, webhooks/, events/); the
// statements are by feature (sqlite-plant-writes.ts, sqlite-webhook-writes.ts, event-jobs.ts,
// sqlite-auth-writes.ts), and this file is their table. A transport (write-transports.ts, process/worker-link.ts)
// carries a command as a WireCommand and its answer as a WireReply, the one codec below; the writer on the calling
// thread (sameThreadWriter) runs them as they are.
import type Database from 'better-sqlite3';
import { StoreUnavailableError } from '../../errors/store-errors.js';
import { decodeItems, encodeOutcomes, type WireCommand, type WireItems, type WireReply } from '../writer-wire.js';
import type { PlantWrite } from '../../plants/plant.js';
import type { WriteOutcome } from '../plant-writes.js';
import type { TokenRecord } from '../../auth/token.js';
import type { TicketRecord } from '../../auth/stream-tickets.js';
import type { RestoreRecord } from '../restores.js';
import type { ClaimRequest, RequeueRequest, WebhookSubscription } from '../../webhooks/delivery.js';
import { createBatchWriter, restoreWrite, type BatchTiming, type BatchWriter } from './sqlite-plant-writes.js';
import { webhookWrites, type AttemptWrite } from './sqlite-webhook-writes.js';
import { createEventJobs } from './event-jobs.js';
import { ticketWrites, tokenWrites } from './sqlite-auth-writes.js';

/**
 * The commands on one connection; each group's statements are prepared on its first use (after migrating), the
 * plant writes' at once when `ready` says so (a write worker started after migrating: the first write does not
 * wait for them; a store an older version migrated may lack tables, and then they wait for the first write).
 */
export function createWriteCommands(db: Database.Database, { ready = false } = {}): WriteCommands {
  const plants = once(() => createBatchWriter(db));
  if (ready) {
    try {
      plants();
    } catch {
      // Prepared by the first plant write, which reports what is wrong.
    }
  }
  return commandTable(db, plants);
}

function commandTable(db: Database.Database, plants: () => BatchWriter) {
  const jobs = once(() => createEventJobs(db));
  const hooks = once(() => webhookWrites(db));
  const tokens = once(() => tokenWrites(db));
  const tickets = once(() => ticketWrites(db));
  const restore = once(() => restoreWrite(db));
  return {
    /** A batch of plant writes (writer-wire.ts's flat form), answered with their outcomes, flat too (WireOutcomes). */
    plants: (items: WireItems) => encodeOutcomes(plants()(decodeItems(items))),
    /** The same, with when its statements and its COMMIT ran (tracing on). */
    plantsTimed: (items: WireItems) => {
      const { outcomes, timing } = plants().timed(decodeItems(items));
      return { results: encodeOutcomes(outcomes), timing };
    },
    sequence: (maxDeliveries: number, now: number) => jobs().sequence(maxDeliveries, now),
    removeOlderThan: (cutoff: number, maxEvents: number) => jobs().removeOlderThan(cutoff, maxEvents),
    insertSubscription: (sub: WebhookSubscription, seen: string) => hooks().insertSubscription(sub, seen),
    deleteSubscription: (id: string, now: number) => hooks().deleteSubscription(id, now),
    replaceSecret: (id: string, current: string, next: string) => hooks().replaceSecret.run(next, id, current).changes === 1,
    enableSubscription: (id: string) => hooks().enableSubscription(id),
    claim: (request: ClaimRequest) => hooks().claim(request),
    recordAttempts: (attempts: readonly AttemptWrite[]) => hooks().recordAttempts(attempts),
    retryDelivery: (subscriptionId: string, deliveryId: string, now: Date) => hooks().retryDelivery(subscriptionId, deliveryId, now),
    requeueDeliveries: (input: RequeueRequest) => hooks().requeueDeliveries(input),
    insertToken: (t: TokenRecord) => void tokens().insert(t),
    revokeToken: (id: string, at: Date) => tokens().revoke.run(at.getTime(), id).changes === 1,
    touchTokens: (lastUsed: readonly (readonly [string, Date])[]) => tokens().touch(lastUsed),
    recordRestore: (r: RestoreRecord) => restore()(r),
    insertTicket: (t: TicketRecord, expiredBefore: Date) => tickets()(t, expiredBefore),
  };
}

export type WriteCommands = ReturnType<typeof commandTable>;
export type CommandName = keyof WriteCommands;
export type ArgsOf<N extends CommandName> = Parameters<WriteCommands[N]>;
export type ResultOf<N extends CommandName> = ReturnType<WriteCommands[N]>;

/** How the engine's ports ask the writer for a command. */
export type Write = <N extends CommandName>(name: N, ...args: ArgsOf<N>) => Promise<ResultOf<N>>;

/**
 * The writer on the calling thread (sqlite-role.ts): the commands run as they are, and plant batches on the
 * writes themselves, with no codec. What fails, fails as it would through a transport (resultOf).
 */
export interface SameThreadWriter {
  run<N extends CommandName>(name: N, args: ArgsOf<N>): ResultOf<N>;
  plants(items: readonly PlantWrite[]): WriteOutcome[];
  /** The same, with when its statements and its COMMIT ran (tracing on). */
  plantsTimed(items: readonly PlantWrite[]): { outcomes: WriteOutcome[]; timing: BatchTiming };
  /** A command another process sent (serveWrite), answered as the write worker answers. */
  serve(command: WireCommand): WireReply;
}

export function sameThreadWriter(db: Database.Database): SameThreadWriter {
  const plants = once(() => createBatchWriter(db));
  const commands = commandTable(db, plants);
  return {
    run: <N extends CommandName>(name: N, args: ArgsOf<N>) => failingAsCrossed(() => (commands[name] as (...a: readonly unknown[]) => unknown)(...args) as ResultOf<N>),
    plants: (items) => failingAsCrossed(() => plants()(items)),
    plantsTimed: (items) => failingAsCrossed(() => plants().timed(items)),
    serve: (command) => runCommand(commands, command),
  };
}

/** Runs a write on this thread; what fails, fails as it would have crossed a transport (resultOf). */
function failingAsCrossed<T>(write: () => T): T {
  try {
    return write();
  } catch (err) {
    throw crossed(failedReply(err));
  }
}

/** The writer's side of the codec: runs the command and answers with its result, or with what failed. */
export function runCommand(commands: WriteCommands, command: WireCommand): WireReply {
  try {
    const run = commands[command.name as CommandName] as ((...args: readonly unknown[]) => unknown) | undefined;
    if (!run) throw new Error(`no such write command: ${command.name}`);
    return { ok: true, result: run(...command.args) };
  } catch (err) {
    return failedReply(err);
  }
}

/** A failure as a reply; the driver's error code (SQLITE_BUSY, SQLITE_FULL...) crosses with it. */
export function failedReply(err: unknown): FailedReply {
  const cause = err instanceof StoreUnavailableError && err.cause instanceof Error ? err.cause : err;
  return { ok: false, message: (cause as Error).message, code: (cause as { code?: string }).code };
}

/** The caller's side of the codec: the result, or a StoreUnavailableError holding the writer's error. */
export function resultOf<N extends CommandName>(reply: WireReply): ResultOf<N> {
  if (reply.ok) return reply.result as ResultOf<N>;
  throw crossed(reply);
}

type FailedReply = Extract<WireReply, { ok: false }>;

/** A failure as the caller sees it, whether its reply crossed to another thread or not: message and code. */
function crossed(reply: FailedReply): StoreUnavailableError {
  return new StoreUnavailableError(Object.assign(new Error(reply.message), { code: reply.code }));
}

function once<T>(make: () => T): () => T {
  let made: T | undefined;
  return () => (made ??= make());
}
