// Load shedding: while the event loop lags beyond a bound, API requests are answered 503 with Retry-After
// at once instead of joining an unbounded queue. Health checks, the document and metrics are never shed.
import type { FastifyInstance } from 'fastify';
import { AppError } from '../errors/catalogue.js';
import type { Contract } from '../http/contract.js';

/** How often the event-loop delay is sampled; also the shortest time shedding lasts. */
const SAMPLE_MS = 100;

export interface LagProbe {
  /**
   * The event-loop delay of the last two samples, in ms (the smaller): one long pause (a GC, a burst of
   * start-up work) is not overload, a loop that keeps lagging is.
   */
  lagMs(): number;
  stop(): void;
}

/**
 * Measures event-loop delay with a timer that notes how late it fires. After a stall, timers run before
 * the loop reads new requests, so the requests that queued up during the stall already see it.
 */
export function startLagProbe(): LagProbe {
  let previous = 0;
  let latest = 0;
  let expected = performance.now() + SAMPLE_MS;
  const timer = setInterval(() => {
    const t = performance.now();
    previous = latest;
    latest = Math.max(0, t - expected);
    expected = t + SAMPLE_MS;
  }, SAMPLE_MS);
  timer.unref();
  return { lagMs: () => Math.min(previous, latest), stop: () => clearInterval(timer) };
}

/** Whether a request to a route (its method and Fastify URL) would be shed now. */
export type Shedding = (method: string, url: string | undefined) => boolean;

/**
 * Sheds the operations that can answer 503 and need a token (the API), when the lag exceeds `maxLagMs`; returns
 * the same judgement for a path that answers outside Fastify's hooks (plants/read-lane.ts).
 */
export function registerLoadShedding(app: FastifyInstance, contract: Contract, maxLagMs: number): Shedding {
  if (maxLagMs <= 0) return () => false;
  const sheddable = new Set(
    contract.operations
      .filter((op) => op.security.length > 0 && op.responses['503'] !== undefined)
      .map((op) => `${op.method} ${op.url}`),
  );
  // Sampling starts once the app is ready: start-up work (compiling the document's schemas) is not load.
  let probe: LagProbe | undefined;
  app.addHook('onReady', async () => {
    probe = startLagProbe();
  });
  app.addHook('onClose', async () => probe?.stop());
  const sheds: Shedding = (method, url) => (probe?.lagMs() ?? 0) > maxLagMs && sheddable.has(`${method} ${url}`);
  app.addHook('onRequest', (request, _reply, done) => {
    if (!sheds(request.method, request.routeOptions.url)) {
      done();
      return;
    }
    const lag = probe!.lagMs();
    done(new AppError('OVERLOADED', undefined, { headers: { 'retry-after': String(Math.max(1, Math.ceil(lag / 1000))) } }));
  });
  return sheds;
}
