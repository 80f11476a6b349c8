// How a write crosses to the writer (SQLite's write worker, or a multi-process server's primary): a command,
// by name with its arguments, answered by a reply; whatever carries them (a transport) carries these two shapes.
// A batch of plant writes travels as flat arrays of values rather than an object per write. Structured clone
// writes every object's property names; flat, postMessage of a batch of 100 creates takes ~30 instead of ~95 us
// on the main thread, and the writer decodes it faster too. The outcomes the batch decided come back flat as
// well; events are made in the writer, with the versions the writes took.
import { lengthRule, type PlantPatch, type PlantWrite, type VersionedPlant } from '../plants/plant.js';
import type { WriteOutcome } from './plant-writes.js';

/**
 * A write for the writer to run: a command's name and its arguments, plain values (structured clone and the
 * cluster's v8 serialization carry bigints and Dates as they are). The engine names the commands.
 */
export interface WireCommand {
  name: string;
  args: readonly unknown[];
}

/** The writer's answer to a command: its result as the writer made it, or what failed (the driver's code too). */
export type WireReply = { ok: true; result: unknown } | { ok: false; message: string; code: string | undefined };

/** What carries commands to the writer and its replies back: this thread, a worker thread, or the IPC to the primary. */
export interface WriteTransport {
  /** Resolves with the writer's reply; rejects (StoreUnavailableError) only when the command could not reach it. */
  send(command: WireCommand): Promise<WireReply>;
  /** Gets ready for the first command ahead of time (starts a thread); optional. */
  warm?(): void;
  /** Answers what was sent, then lets the writer go. */
  close?(): Promise<void>;
}

/**
 * Per write: its kind, id, name, tag, required version, trace context (tracing/spans.ts traceText, or null). A patch's name is null when it leaves the name alone; its
 * tag is null when it leaves the tag alone and false when it removes it; its required versions are a list (If-Match
 * may name several), or null.
 */
const SLOTS = 6;
const OPS = ['create', 'replace', 'delete', 'patch'] as const;
export type WireItems = (number | bigint | string | boolean | readonly bigint[] | null)[];

/** How many writes a wire batch holds. */
export function wireItemCount(wire: WireItems): number {
  return wire.length / SLOTS;
}

export function encodeItems(items: readonly PlantWrite[]): WireItems {
  const wire: WireItems = new Array(items.length * SLOTS).fill(null);
  for (let i = 0, k = 0; i < items.length; i++, k += SLOTS) {
    const item = items[i]!;
    wire[k] = OPS.indexOf(item.op);
    if (item.trace !== undefined) wire[k + 5] = item.trace;
    if (item.op === 'delete') {
      wire[k + 1] = item.id;
      wire[k + 4] = item.ifVersion ?? null;
    } else if (item.op === 'patch') {
      wire[k + 1] = item.id;
      wire[k + 2] = item.patch.name ?? null;
      wire[k + 3] = item.patch.tag === undefined ? null : item.patch.tag ?? false;
      wire[k + 4] = item.ifVersions ?? null;
    } else {
      wire[k + 1] = item.plant.id;
      wire[k + 2] = item.plant.name;
      wire[k + 3] = item.plant.tag ?? null;
      if (item.op === 'replace') wire[k + 4] = item.ifVersion ?? null;
    }
  }
  return wire;
}

export function decodeItems(wire: WireItems): PlantWrite[] {
  const items = new Array<PlantWrite>(wire.length / SLOTS);
  for (let i = 0, k = 0; i < items.length; i++, k += SLOTS) {
    const op = OPS[wire[k] as number]!;
    const id = wire[k + 1] as bigint;
    if (op === 'patch') {
      const name = wire[k + 2] as string | null;
      const tag = wire[k + 3] as string | false | null;
      const patch: PlantPatch = {};
      if (name !== null) patch.name = name;
      if (tag !== null) patch.tag = tag === false ? null : tag;
      items[i] = { op, id, patch, ifVersions: (wire[k + 4] as readonly bigint[] | null) ?? undefined };
      traced(items[i]!, wire[k + 5]);
      continue;
    }
    const ifVersion = (wire[k + 4] as bigint | null) ?? undefined;
    if (op === 'delete') {
      items[i] = { op, id, ifVersion };
      traced(items[i]!, wire[k + 5]);
      continue;
    }
    const tag = wire[k + 3] as string | null;
    const plant = tag === null ? { id, name: wire[k + 2] as string } : { id, name: wire[k + 2] as string, tag };
    items[i] = op === 'replace' ? { op, plant, ifVersion } : { op, plant };
    traced(items[i]!, wire[k + 5]);
  }
  return items;
}

function traced(item: PlantWrite, trace: WireItems[number] | undefined): void {
  if (typeof trace === 'string') item.trace = trace;
}

/** The trace context of the first traced write of a wire batch (a commit span's parent in the writer). */
export function firstTrace(wire: WireItems): string | undefined {
  for (let k = 5; k < wire.length; k += SLOTS) if (typeof wire[k] === 'string') return wire[k] as string;
  return undefined;
}

/**
 * A batch's outcomes (storage/plant-writes.ts), two values per write: the outcome's kind, by its index in KINDS, then
 * what it carries: a create's version, the plant it concerns, a too-long field's name, or null.
 */
export type WireOutcomes = (number | bigint | VersionedPlant | string | null)[];

const KINDS = ['created', 'replayed', 'conflict', 'changed', 'unchanged', 'not-found', 'version-mismatch', 'too-long'] as const satisfies readonly WriteOutcome['kind'][];
const KIND_INDEX = Object.fromEntries(KINDS.map((k, i) => [k, i])) as Record<WriteOutcome['kind'], number>;
/** The member of each kind of outcome that crosses as its second value (the too-long rule is made again from the field). */
const CARRIED = { created: 'version', replayed: 'version', conflict: 'existing', changed: 'plant', unchanged: 'plant', 'not-found': undefined, 'version-mismatch': 'current', 'too-long': 'field' } as const;
const CREATED = KIND_INDEX.created;
const CHANGED = KIND_INDEX.changed;

export function encodeOutcomes(outcomes: readonly WriteOutcome[]): WireOutcomes {
  const wire: WireOutcomes = new Array(outcomes.length * 2);
  for (let i = 0; i < outcomes.length; i++) {
    const o = outcomes[i]!;
    const member = CARRIED[o.kind];
    wire[2 * i] = KIND_INDEX[o.kind];
    wire[2 * i + 1] = member === undefined ? null : (o as unknown as Record<string, WireOutcomes[number]>)[member]!;
  }
  return wire;
}

export function decodeOutcomes(wire: WireOutcomes): WriteOutcome[] {
  const outcomes = new Array<WriteOutcome>(wire.length / 2);
  for (let i = 0; i < outcomes.length; i++) {
    const kind = KINDS[wire[2 * i] as number]!;
    const member = CARRIED[kind];
    const value = wire[2 * i + 1];
    outcomes[i] = (
      member === undefined ? { kind } : kind === 'too-long' ? { kind, field: value, rule: lengthRule(value as 'name' | 'tag') } : { kind, [member]: value }
    ) as WriteOutcome;
  }
  return outcomes;
}

/** Whether any write of the batch happened (and so wrote its event). */
export function wroteAny(wire: WireOutcomes): boolean {
  for (let k = 0; k < wire.length; k += 2) if (wire[k] === CREATED || wire[k] === CHANGED) return true;
  return false;
}

/** Each batch's outcomes from those of the batches joined end to end (two values per write). */
export function splitOutcomes(batches: readonly WireItems[], wire: WireOutcomes): WireOutcomes[] {
  let at = 0;
  return batches.map((b) => wire.slice(at, (at += 2 * wireItemCount(b))));
}
