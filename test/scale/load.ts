// A bounded write load for the scale-out and outage tests: concurrent clients POST fresh plants back to back
// over keep-alive connections (test/helpers/load.ts's loop), every request has a deadline (a hang is an outcome,
// not a stuck test), and every outcome is kept: 200s by id, other answers by status with their Retry-After and a
// sample body, requests that ended without an answer by error code with their ids (their fate is unknown).
import { plantName, postLoad, type Exchange } from '../helpers/load.js';

export { plantName };

export interface Answer {
  id: bigint;
  status: number;
  /** ms since the load started, when the answer arrived. */
  at: number;
  ms: number;
  retryAfter?: string;
  contentType?: string;
  body: string;
}

export interface WriteLoad {
  /** Ids answered 200, with the time (ms since start) of the answer. */
  ok: Map<bigint, number>;
  /** Every answer other than 200. */
  others: Answer[];
  /** Requests that ended without an answer (socket error, or no answer within the deadline). */
  failed: { id: bigint; code: string; at: number; ms: number }[];
  sent: number;
  /** Longest time any request took, answered or not. */
  maxMs: number;
}

export function emptyLoad(): WriteLoad {
  return { ok: new Map(), others: [], failed: [], sent: 0, maxMs: 0 };
}

/**
 * `clients` concurrent writers until `until()` is true. Ids start at `firstId` and are never reused; a client
 * pauses `pauseMs` after a failure so an outage does not turn into a busy loop.
 */
export async function writeLoad(options: {
  port: number;
  token: string;
  clients: number;
  firstId: bigint;
  until: () => boolean;
  timeoutMs: number;
  result?: WriteLoad;
  pauseMs?: number;
  /** A bound on the whole load, so a test that fails before it says stop does not leave it running. */
  maxMs?: number;
}): Promise<WriteLoad> {
  const result = options.result ?? emptyLoad();
  const t0 = Date.now();
  const pause = options.pauseMs ?? 20;
  const maxMs = options.maxMs ?? 120_000;
  const record = ({ id, outcome: out, at, ms }: Exchange): number => {
    result.maxMs = Math.max(result.maxMs, ms);
    if (out.kind === 'error') {
      result.failed.push({ id, code: out.code, at, ms });
      return pause;
    }
    if (out.status === 200) {
      result.ok.set(id, at);
      return 0;
    }
    const retryAfter = out.headers['retry-after'];
    result.others.push({ id, status: out.status, at, ms, retryAfter, contentType: out.headers['content-type'], body: out.body.slice(0, 300) });
    return pause;
  };
  const until = () => options.until() || Date.now() - t0 >= maxMs;
  await postLoad({ port: options.port, token: options.token, clients: options.clients, firstId: options.firstId, until, timeoutMs: options.timeoutMs, startedAt: t0, result, record });
  return result;
}

export function describeLoad(r: WriteLoad): string {
  const byStatus = new Map<number, number>();
  for (const o of r.others) byStatus.set(o.status, (byStatus.get(o.status) ?? 0) + 1);
  const byCode = new Map<string, number>();
  for (const f of r.failed) byCode.set(f.code, (byCode.get(f.code) ?? 0) + 1);
  const s = [...byStatus].map(([k, v]) => `${k}x${v}`).join(' ');
  const e = [...byCode].map(([k, v]) => `${k}x${v}`).join(' ');
  return `sent=${r.sent} ok=${r.ok.size} other=[${s}] no-answer=[${e}] slowest=${r.maxMs}ms`;
}

/** Runs `fn` over `items` with at most `concurrency` in flight. */
export async function eachLimited<T>(items: T[], concurrency: number, fn: (item: T) => Promise<void>): Promise<void> {
  let i = 0;
  const worker = async () => {
    while (i < items.length) await fn(items[i++]!);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
}
