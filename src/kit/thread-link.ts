// A thread that answers calls over a channel (channel.ts), both ends: the parent's ThreadLink starts it on first
// use (a link never used costs no thread and no isolate) and again after it dies, and ends it on close();
// answerParent is the thread's side. An idle thread never keeps the process alive.
import { parentPort, type Worker } from 'node:worker_threads';
import { createChannel, threadCarrier, type CallRule, type Channel, type Args, type Handlers, type Result } from './channel.js';

/** What every such thread answers: `close` ends it once it has answered what came before. */
export interface ThreadMethods {
  close(): void;
}
/** What the thread posts once it started: ready to answer, or why it cannot. */
type Started = { ready: true } | { failed: string };

export class ThreadLink<M extends ThreadMethods> {
  private current?: { worker: Worker; carrier: ReturnType<typeof threadCarrier>; channel: Channel<M> };
  private ready?: Promise<Channel<M>>;
  /** The channel of a thread that answers: calls go straight to it. */
  private live?: Channel<M>;

  /** `spawn` starts the thread; `label` names it in errors; `rule` answers its calls that get no reply. */
  constructor(
    private readonly spawn: () => Worker,
    private readonly label: string,
    private readonly rule: CallRule<never>,
  ) {}

  private start(): Promise<Channel<M>> {
    return (this.ready ??= new Promise<Channel<M>>((resolve, reject) => {
      const worker = this.spawn();
      const carrier = threadCarrier(worker, this.label);
      const channel = createChannel<M>(carrier, {
        rule: this.rule,
        closed: (err) => {
          if (this.current?.worker === worker) (this.current = this.live = undefined), (this.ready = undefined);
          reject(err);
        },
      });
      this.current = { worker, carrier, channel };
      const started = (msg: Started) => {
        if ('ready' in msg) resolve(channel);
        else if ('failed' in msg) reject(new Error(msg.failed));
        else return;
        worker.off('message', started);
      };
      worker.on('message', started);
      // After the listeners: adding a 'message' listener references the worker's port again.
      worker.unref();
    }));
  }

  /** Starts the thread ahead of its first call; a failure is reported by that call, which starts it again. */
  warm(): void {
    this.start().catch(() => {
      this.ready = undefined;
    });
  }

  /** Calls `name` on the thread, started first if need be; a thread that cannot start answers by the rule ('unsent'). */
  request<K extends keyof M>(name: K, ...arg: Args<M, K>): Promise<Result<M, K>>;
  // One argument, not a rest array: no allocation per call.
  request(name: keyof M, arg?: unknown): Promise<unknown> {
    const live = this.live;
    return live ? (live.request as (name: keyof M, arg?: unknown) => Promise<unknown>)(name, arg) : this.startThenRequest(name, arg);
  }

  private async startThenRequest(name: keyof M, arg: unknown): Promise<unknown> {
    const starting = this.start();
    // Keeps the process alive while a caller awaits the thread's start; then the channel holds it while calls wait.
    this.current?.worker.ref();
    let channel: Channel<M>;
    try {
      channel = await starting;
    } catch (err) {
      this.ready = undefined;
      if (!this.rule.fallback) throw err;
      return this.rule.fallback('unsent', err as Error);
    }
    // Set here, after the calls that awaited the start: they go first, in the order they were made.
    if (this.current?.channel === channel) this.live = channel;
    return (channel.request as (name: keyof M, arg?: unknown) => Promise<unknown>)(name, arg);
  }

  /** Ends the thread once it has answered what it was sent (a thread still starting reads it once it has). */
  async close(): Promise<void> {
    const current = this.current;
    if (!current || !this.ready) return;
    this.current = this.live = undefined;
    this.ready = undefined;
    const exited = new Promise((resolve) => current.worker.once('exit', resolve));
    // Referenced until it exits, or an otherwise idle process would exit before the thread closed its connection.
    current.carrier.keep();
    current.channel.notify('close');
    await exited;
  }
}

/**
 * The thread's side: `open` gets it ready (throws when it cannot) and gives what it answers; its `close` runs
 * before the port closes.
 */
export function answerParent<M extends ThreadMethods>(open: () => Handlers<M>): void {
  const port = parentPort!;
  let handlers: Handlers<M>;
  try {
    handlers = open();
  } catch (err) {
    port.postMessage({ failed: (err as Error).message } satisfies Started);
    port.close();
    return;
  }
  const close = handlers.close;
  createChannel<Record<never, never>, M>(threadCarrier(port), {
    handlers: {
      ...handlers,
      close: () => {
        close();
        port.close();
      },
    },
  });
  port.postMessage({ ready: true } satisfies Started);
}
