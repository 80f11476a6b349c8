// Every request/reply pair between threads and processes travels one channel: calls typed by the other side's
// method table, one id map, one deadline and fallback rule, and every waiting call failed when the carrier
// closes. A carrier is what moves messages: a worker thread or its port (threadCarrier) or an IPC channel
// (ipcCarrier). Messages go as they are (structured clone, the cluster's v8 serialization), no encoding.
//
// A message of the channel is tagged by its `rpc` id: above 0 a call, 0 a call that wants no reply, below 0
// the reply to call -rpc. Other messages on the same carrier are left to their own listeners.
import type { MessagePort, Worker } from 'node:worker_threads';

/**
 * A method table: what one side answers. Each method takes at most one argument, so a call is one message with
 * no array of arguments; it answers its result, or a promise of it.
 */
export type Methods = object;
type Fn<M, K extends keyof M> = M[K] extends (...args: infer A) => infer R ? { args: A; result: Awaited<R> } : never;
export type Args<M, K extends keyof M> = Fn<M, K>['args'];
export type Result<M, K extends keyof M> = Fn<M, K>['result'];
export type Handlers<M> = { [K in keyof M]: (...args: Args<M, K>) => Result<M, K> | Promise<Result<M, K>> };

/** Why a call got no reply: it could not go, its deadline passed, the channel closed, or the other side failed. */
export type Why = 'unsent' | 'timeout' | 'closed' | 'failed';
/** How a call that got no reply is answered: a value to resolve with, or a throw to reject with. */
export type Fallback<R> = (why: Why, err: Error) => R;
export interface CallRule<R> {
  /** How long to wait for the reply; none: until it comes or the channel closes. */
  timeoutMs?: number;
  /** None: the call rejects with `err`. */
  fallback?: Fallback<R>;
}

export interface ChannelOptions<Remote, Local> {
  /** What this side answers. */
  handlers?: Handlers<Local>;
  /** The rule of every call this side makes, unless `calls` names its method. */
  rule?: CallRule<never>;
  calls?: { [K in keyof Remote]?: CallRule<Result<Remote, K>> };
  /** Told once when the carrier closes (or close() is called). */
  closed?: (err: Error) => void;
}

export interface Channel<Remote> {
  /** Calls `name` on the other side; resolves with its result, or with what the call's rule makes of none. */
  request<K extends keyof Remote>(name: K, ...arg: Args<Remote, K>): Promise<Result<Remote, K>>;
  /** Calls `name` with no reply; false when it could not go. */
  notify<K extends keyof Remote>(name: K, ...arg: Args<Remote, K>): boolean;
  /** Calls waiting for their reply. */
  readonly pending: number;
  /** Fails every waiting call and every later one ('closed'). */
  close(err: Error): void;
}

export interface Carrier {
  /** Sends one message; false (or a throw) when it cannot go. */
  send(msg: Envelope): boolean;
  listen(receive: (msg: unknown) => void, closed: (err: Error) => void): void;
  /** Keeps the process alive while calls wait (busy) or not; optional. */
  hold?(busy: boolean): void;
}

export type Envelope = { rpc: number; m: string; a: unknown } | { rpc: number; r: unknown } | { rpc: number; e: string };
interface Waiting {
  resolve(value: unknown): void;
  reject(err: unknown): void;
  rule: CallRule<unknown> | undefined;
  timer: NodeJS.Timeout | undefined;
}

export function createChannel<Remote extends Methods, Local extends Methods = Record<never, never>>(carrier: Carrier, options: ChannelOptions<Remote, Local> = {}): Channel<Remote> {
  const handlers = new Map(Object.entries(options.handlers ?? {}) as [string, (arg: unknown) => unknown][]);
  const calls = (options.calls ?? {}) as Record<string, CallRule<unknown> | undefined>;
  const waiting = new Map<number, Waiting>();
  let seq = 0;
  let closedBy: Error | undefined;

  const answer = (w: Waiting, why: Why, err: Error) => {
    if (!w.rule?.fallback) return w.reject(err);
    try {
      w.resolve(w.rule.fallback(why, err));
    } catch (thrown) {
      w.reject(thrown);
    }
  };
  /** Takes call `id` out of the waiting ones; undefined when it was answered already. */
  const take = (id: number): Waiting | undefined => {
    const w = waiting.get(id);
    if (!w) return undefined;
    waiting.delete(id);
    if (w.timer) clearTimeout(w.timer);
    if (waiting.size === 0) carrier.hold?.(false);
    return w;
  };
  const expire = (id: number, name: string, ms: number) => {
    const w = take(id);
    if (w) answer(w, 'timeout', new Error(`no reply to ${name} within ${ms} ms`));
  };
  const reply = (msg: Envelope) => {
    try {
      carrier.send(msg);
    } catch {
      // the caller is gone: its side fails the call
    }
  };
  const close = (err: Error) => {
    if (closedBy) return;
    closedBy = err;
    const all = [...waiting.values()];
    waiting.clear();
    if (all.length > 0) carrier.hold?.(false);
    for (const w of all) {
      if (w.timer) clearTimeout(w.timer);
      answer(w, 'closed', err);
    }
    options.closed?.(err);
  };

  carrier.listen((msg) => {
    const id = (msg as { rpc?: unknown } | null)?.rpc;
    if (typeof id !== 'number' || closedBy) return;
    if (id < 0) {
      const w = take(-id);
      if (!w) return; // answered already: by its deadline
      if ('e' in (msg as object)) answer(w, 'failed', new Error((msg as { e: string }).e));
      else w.resolve((msg as { r: unknown }).r);
      return;
    }
    const { m, a } = msg as { m: string; a: unknown };
    const handler = handlers.get(m);
    let out: unknown;
    try {
      if (!handler) throw new Error(`no method ${m}`);
      out = handler(a);
    } catch (err) {
      if (id > 0) reply({ rpc: -id, e: (err as Error).message });
      return;
    }
    if (out instanceof Promise) {
      if (id > 0) out.then((r: unknown) => reply({ rpc: -id, r }), (err: unknown) => reply({ rpc: -id, e: (err as Error).message }));
      else out.catch(() => {});
    } else if (id > 0) reply({ rpc: -id, r: out });
  }, close);

  return {
    request(name: string, arg?: unknown) {
      return new Promise((resolve, reject) => {
        const rule = calls[name] ?? options.rule;
        const w: Waiting = { resolve, reject, rule, timer: undefined };
        if (closedBy) return answer(w, 'closed', closedBy);
        const id = ++seq;
        if (waiting.size === 0) carrier.hold?.(true);
        waiting.set(id, w);
        let sent = false;
        let cause: unknown;
        try {
          sent = carrier.send({ rpc: id, m: name, a: arg });
        } catch (err) {
          cause = err;
        }
        if (!sent) {
          if (take(id)) answer(w, 'unsent', new Error(`${name} could not be sent`, { cause }));
        } else if (rule?.timeoutMs !== undefined && waiting.get(id) === w) {
          w.timer = setTimeout(expire, rule.timeoutMs, id, name, rule.timeoutMs);
          w.timer.unref();
        }
      });
    },
    notify(name: string, arg?: unknown) {
      if (closedBy) return false;
      try {
        return carrier.send({ rpc: 0, m: name, a: arg });
      } catch {
        return false;
      }
    },
    get pending() {
      return waiting.size;
    },
    close,
  } as Channel<Remote>;
}

/** A thread's carrier: a Worker seen from its parent, or a thread's parentPort. `label` names it in errors. */
export function threadCarrier(end: Worker | MessagePort, label = 'the thread'): Carrier & { keep(): void } {
  const on = end.on.bind(end) as (event: string, listener: (...args: never[]) => void) => void;
  let kept = false;
  return {
    send(msg) {
      end.postMessage(msg);
      return true;
    },
    listen(receive, closed) {
      on('message', receive);
      on('error', closed);
      on('exit', (code: number) => closed(new Error(`${label} exited (code ${code})`)));
      on('close', () => closed(new Error(`${label} closed its port`)));
    },
    hold(busy) {
      if (busy) end.ref();
      else if (!kept) end.unref();
    },
    /** Referenced until it ends, whatever waits: its owner is closing it and waits for its exit. */
    keep() {
      kept = true;
      end.ref();
    },
  };
}

/** One end of an IPC channel: a cluster worker's `process`, or the primary's `worker.process` of one. */
export interface IpcEnd {
  readonly connected: boolean;
  send?(msg: unknown, callback: (err: Error | null) => void): boolean;
  on(event: 'message' | 'disconnect', listener: (msg: unknown) => void): unknown;
}

/** An IPC carrier; send()'s own false means queued behind others, and the message still goes. */
export function ipcCarrier(end: IpcEnd): Carrier {
  return {
    send(msg) {
      if (!end.connected || !end.send) return false;
      // With a callback, a channel that closes before the write (EPIPE: the other side is exiting) is reported
      // to it, not emitted as an 'error' that would end this process; 'disconnect' then fails what waits.
      end.send(msg, ignoreGone);
      return true;
    },
    listen(receive, closed) {
      end.on('message', receive);
      end.on('disconnect', () => closed(new Error('the IPC channel closed')));
    },
  };
}

function ignoreGone(): void {}
