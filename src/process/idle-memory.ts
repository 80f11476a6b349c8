// What V8's heap holds beyond what the process uses, handed back: once after start-up, and whenever load has
// grown the old generation well past what a full collection left in it.
//
// After start-up: loading the modules and building the app grow the young generation to its limit (16 MiB
// semi-spaces under `npm start`'s flag) and leave garbage in the old one; V8 shrinks them only in a collection made
// under memory pressure, which a process that waits for requests never makes. One such collection, when the event
// loop has been idle a while, takes about 15 MB off every process's resident memory (bench/README.md, "Memory").
//
// Under load: at a few hundred connections, what requests in flight hold when a scavenge runs is promoted (about
// 0.5 MB a second at GET c=256, in a bare node:http server too) and dies in the old generation, which V8 lets grow
// to about four times what its last full collection kept before it makes the next one (its limit for a process of
// 15 MB alive: 80-90 MB). A smaller limit through V8's own flags (--heap-growing-percent) cost GET 2-7% of its CPU
// per request; a full collection made here when the old generation has grown by the headroom cost no CPU per
// request that pair could see, in pauses of 9-40 ms every 10-30 s at that load (bench/README.md, "Memory").
import { performance } from 'node:perf_hooks';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** The event loop's busy share over a check below which the process counts as idle. */
const IDLE_UTILIZATION = 0.02;
const CHECK_MS = 1_000;
/** Checks in a row that must find the process idle. */
const IDLE_CHECKS = 2;
export const MIB = 1_048_576;
/** Least time between two collections made for the headroom: at most one full pause this often. */
const MIN_INTERVAL_MS = 5_000;

/** Makes the collection once the event loop has been idle for IDLE_CHECKS checks in a row; the returned function cancels it. */
export function collectWhenIdle(): () => void {
  let last = performance.eventLoopUtilization();
  let idle = 0;
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    idle = performance.eventLoopUtilization(now, last).utilization <= IDLE_UTILIZATION ? idle + 1 : 0;
    last = now;
    if (idle < IDLE_CHECKS) return;
    clearInterval(timer);
    gcFunction()({ type: 'major', flavor: 'last-resort' });
  }, CHECK_MS);
  timer.unref();
  return () => clearInterval(timer);
}

/** Both of this module's collections for a serving process; the returned function stops them. */
export function keepHeapSmall(headroomBytes: number): () => void {
  const stopIdle = collectWhenIdle();
  const stopBound = boundOldGeneration(headroomBytes);
  return () => {
    stopIdle();
    stopBound();
  };
}

/** What boundOldGeneration reads and does; the process's own V8 heap unless a test gives another. */
export interface OldGeneration {
  /** Bytes in use in the old generation (old and large-object spaces). */
  usedBytes(): number;
  /** A full collection, now. */
  collect(): void;
}

export const v8OldGeneration: OldGeneration = {
  usedBytes: () => {
    let used = 0;
    for (const space of getHeapSpaceStatistics()) {
      if (space.space_name === 'old_space' || space.space_name === 'large_object_space') used += space.space_used_size;
    }
    return used;
  },
  collect: () => gcFunction()({ type: 'major', execution: 'sync' }),
};

export interface BoundOptions {
  heap?: OldGeneration;
  now?: () => number;
  /** Runs `check` every CHECK_MS; returns what stops it. */
  every?: (check: () => void, ms: number) => () => void;
  /** Told of each collection made, with what it took off. */
  collected?: (freedBytes: number) => void;
}

/**
 * Makes a full collection once the old generation holds `headroomBytes` more than the least it has held since
 * the last one (or as much again, if that is more: a process that keeps much alive is collected no more often
 * than V8's doubling would), at most once every MIN_INTERVAL_MS. 0 turns it off. Returns what stops it.
 */
export function boundOldGeneration(headroomBytes: number, options: BoundOptions = {}): () => void {
  if (headroomBytes <= 0) return () => {};
  const { heap = v8OldGeneration, now = Date.now, every = repeat, collected } = options;
  let floor = heap.usedBytes();
  let last = -Infinity;
  return every(() => {
    const used = heap.usedBytes();
    // V8's own collections lower it too.
    floor = Math.min(floor, used);
    if (used - floor <= Math.max(headroomBytes, floor) || now() - last < MIN_INTERVAL_MS) return;
    heap.collect();
    last = now();
    floor = heap.usedBytes();
    collected?.(used - floor);
  }, CHECK_MS);
}

function repeat(check: () => void, ms: number): () => void {
  const timer = setInterval(check, ms);
  timer.unref();
  return () => clearInterval(timer);
}

let gc: ((options: { type: string; flavor?: string; execution?: string }) => void) | undefined;

/**
 * V8's gc function, taken from a context of its own so that no other code sees a `gc` (as Jest's --logHeapUsage
 * takes it); the flag is set only while that context is made.
 */
function gcFunction(): NonNullable<typeof gc> {
  if (gc) return gc;
  setFlagsFromString('--expose-gc');
  try {
    gc = runInNewContext('gc') as NonNullable<typeof gc>;
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
  return gc;
}
