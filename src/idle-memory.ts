// What start-up leaves in V8's heap, handed back once the process is idle. Loading the modules and building the
// app grow the young generation to its limit (16 MiB semi-spaces under `npm start`'s flag) and leave garbage in
// the old one; V8 shrinks them only in a collection made under memory pressure, which a process that waits for
// requests never makes. One such collection after start-up, when the event loop has been idle a while, takes
// about 15 MB off every process's resident memory (bench/README.md, "Memory"); under load it waits, and it is
// made once: a process that has served keeps the heap its load grew, which V8's own memory reducer trims.
import { performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** The event loop's busy share over a check below which the process counts as idle. */
const IDLE_UTILIZATION = 0.02;
const CHECK_MS = 1_000;
/** Checks in a row that must find the process idle. */
const IDLE_CHECKS = 2;

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
    collectGarbage();
  }, CHECK_MS);
  timer.unref();
  return () => clearInterval(timer);
}

/**
 * V8's full collection under memory pressure ("last resort": it also shrinks the young generation). The gc
 * function is V8's extension, taken from a context of its own so that no other code sees a `gc` (as Jest's
 * --logHeapUsage takes it); the flag is set only while that context is made.
 */
function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  let gc: (options: { type: string; flavor: string }) => void;
  try {
    gc = runInNewContext('gc');
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
  gc({ type: 'major', flavor: 'last-resort' });
}
