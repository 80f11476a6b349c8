// A small HTTP load generator over test/helpers/raw-request.ts, so that every outcome (status, or the socket
// error code) is visible, and the check of what a load left stored after a kill or a drain. `postLoad` is the
// loop; `runLoad` here and test/scale/load.ts's `writeLoad` keep its outcomes each their own way.
import assert from 'node:assert/strict';
import http from 'node:http';
import { plantJson, postRaw, type Outcome } from './raw-request.js';
import { sleep } from './sleep.js';
import { storedPlant } from './stored-plant.js';
import { openStore } from '../../src/storage/open-store.js';

/** The name every load gives the plant it creates. */
export function plantName(id: bigint): string {
  return `plant-${id}`;
}

/** One exchange of a load: the plant's id, how it ended, when (ms since the load started) and how long it took. */
export interface Exchange {
  id: bigint;
  outcome: Outcome;
  at: number;
  ms: number;
}

/**
 * `clients` concurrent clients, each posting fresh unique ids (from `firstId`, never reused) back to back over
 * keep-alive connections until `until()` says stop. `record` keeps each exchange and says what the client does
 * next: a pause in ms before its next request (0: none), or 'stop'.
 */
export async function postLoad(options: {
  port: number;
  token: string;
  clients: number;
  firstId: bigint;
  until: () => boolean;
  /** Counts every request as it is sent, so a test can watch progress. */
  result: { sent: number };
  record: (exchange: Exchange) => number | 'stop';
  startedAt?: number;
  /** Past this a request ends with the outcome `TIMEOUT` (default: no deadline). */
  timeoutMs?: number;
}): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.clients });
  const t0 = options.startedAt ?? Date.now();
  let next = options.firstId;
  const client = async () => {
    while (!options.until()) {
      const id = next++;
      options.result.sent++;
      const started = Date.now();
      const outcome = await postRaw(options.port, options.token, plantJson(id, plantName(id)), { agent, timeoutMs: options.timeoutMs });
      const now = Date.now();
      const then = options.record({ id, outcome, at: now - t0, ms: now - started });
      if (then === 'stop') return;
      // Real time: pacing, as the load asks (a steady rate, or no busy loop while the server is away).
      if (then > 0) await sleep(then);
    }
  };
  await Promise.all(Array.from({ length: options.clients }, client));
  agent.destroy();
}

export interface LoadResult {
  /** Ids answered 200, with the time (ms since load start) the answer arrived. */
  ok: Map<bigint, number>;
  /** Non-200 responses, by status, with one sample body each. */
  statuses: Map<number, { count: number; sample: string; at: number[] }>;
  /** Requests that ended without a response, by socket error code, with the ids (their fate is unknown). */
  errors: Map<string, { ids: bigint[]; at: number[] }>;
  sent: number;
}

/**
 * `clients` concurrent clients, each posting fresh unique ids back to back over keep-alive connections
 * until `until()` says stop or (after `stopOnErrorAfter()` is true) a request fails without a response.
 */
export async function runLoad(options: {
  port: number;
  token: string;
  clients: number;
  firstId: bigint;
  until: () => boolean;
  /** Once true, a client stops at its first failed exchange (the server is gone). */
  stopOnError?: () => boolean;
  startedAt?: number;
  /** Filled while the load runs, so a test can watch progress (e.g. wait for enough 200s). */
  result?: LoadResult;
  /** A pause after each answer, for a steady load rather than as much as the machine takes. */
  pauseMs?: number;
}): Promise<LoadResult> {
  const result: LoadResult = options.result ?? { ok: new Map(), statuses: new Map(), errors: new Map(), sent: 0 };
  const record = ({ id, outcome: out, at }: Exchange): number | 'stop' => {
    if (out.kind === 'response' && out.status === 200) {
      result.ok.set(id, at);
      return options.pauseMs ?? 0;
    }
    if (out.kind === 'response') {
      const s = result.statuses.get(out.status) ?? { count: 0, sample: out.body, at: [] };
      s.count++;
      s.at.push(at);
      result.statuses.set(out.status, s);
      return 0;
    }
    const e = result.errors.get(out.code) ?? { ids: [], at: [] };
    e.ids.push(id);
    e.at.push(at);
    result.errors.set(out.code, e);
    return options.stopOnError?.() ? 'stop' : 5;
  };
  const { port, token, clients, firstId, until, startedAt } = options;
  await postLoad({ port, token, clients, firstId, until, startedAt, result, record });
  return result;
}

export function summarize(r: LoadResult): string {
  const statuses = [...r.statuses].map(([s, v]) => `${s}x${v.count}`).join(' ');
  const errors = [...r.errors].map(([c, v]) => `${c}x${v.ids.length}`).join(' ');
  return `sent=${r.sent} ok=${r.ok.size} other=[${statuses}] errors=[${errors}]`;
}

/**
 * After a load that ended in a kill or a drain: every plant answered 200 is stored as sent, and nothing else is
 * there but some of those whose connection was cut (their fate unknown). Returns a line for t.diagnostic.
 */
export async function assertAcknowledgedStored(databaseUrl: string, result: LoadResult): Promise<string> {
  const inDoubt = [...result.errors.values()].flatMap((e) => e.ids);
  const { store } = await openStore(databaseUrl);
  try {
    const missing: bigint[] = [];
    for (const id of result.ok.keys()) {
      const plant = await storedPlant(store, id);
      if (!plant) missing.push(id);
      else assert.deepEqual(plant, { id, name: plantName(id) });
    }
    assert.deepEqual(missing, [], `${missing.length} acknowledged plants lost`);
    let storedInDoubt = 0;
    for (const id of inDoubt) if (await storedPlant(store, id)) storedInDoubt++;
    const count = await store.countPlants();
    // Only ids some client sent can be there: the acknowledged ones plus some of those cut off mid-answer.
    assert.equal(count, result.ok.size + storedInDoubt, 'a plant no client was answered for, beyond those cut off');
    assert.ok(count <= result.ok.size + inDoubt.length);
    return `acknowledged=${result.ok.size} all stored; cut off=${inDoubt.length}, of which stored=${storedInDoubt}`;
  } finally {
    await store.close();
  }
}
