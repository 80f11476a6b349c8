// Places for GET /events requests that wait for an event (long polls): a bounded number per process and per
// token, so that no client, nor all the clients of one token together, can hold every place. A request that
// gets no place is refused at once (429 for its token's share, 503 for the process's), never answered an empty
// page, which would read as "no events" and send the client straight back.
import { AppError, type ErrorCode } from '../errors/catalogue.js';

export interface WaitPlacesOptions {
  /** Places in this process (EVENTS_MAX_WAITING). */
  maxWaiting: number;
  /** Places one token or JWT subject may hold (EVENTS_MAX_WAITING_PER_TOKEN). */
  maxWaitingPerToken: number;
  /** The refusals over a token's share and over the process's (streams have their own); the waits' by default. */
  refusals?: { token: ErrorCode; full: ErrorCode };
}

export interface WaitPlaces {
  /** Requests waiting now (the events_waiting metric). */
  readonly waiting: number;
  /**
   * Takes a place for a request of `principal` that waits until `deadline` (epoch ms) at the latest, and returns
   * its release (idempotent). Throws EVENTS_TOKEN_WAITING (429) or EVENTS_WAITING_FULL (503), with Retry-After.
   */
  take(principal: string, deadline: number, now?: number): () => void;
}

/** Longest Retry-After of a 429: no wait lasts longer (the document's `wait` maximum). */
const MAX_WAIT_S = 30;

export function createWaitPlaces(options: WaitPlacesOptions): WaitPlaces {
  const refusals = options.refusals ?? { token: 'EVENTS_TOKEN_WAITING', full: 'EVENTS_WAITING_FULL' };
  let waiting = 0;
  // Each principal's waits by deadline; a handful each (the per-token cap), so arrays are the cheapest.
  const byPrincipal = new Map<string, number[]>();
  return {
    get waiting() {
      return waiting;
    },
    take(principal, deadline, now = Date.now()) {
      const own = byPrincipal.get(principal);
      if ((own?.length ?? 0) >= options.maxWaitingPerToken) {
        // The token's own waits end by their deadlines at the latest: the first of them frees a place.
        const soonest = own && own.length > 0 ? Math.min(...own) : now;
        const seconds = Math.min(MAX_WAIT_S, Math.max(1, Math.ceil((soonest - now) / 1000)));
        throw new AppError(refusals.token, undefined, { headers: { 'retry-after': String(seconds) } });
      }
      // 503 carries the catalogue's Retry-After: another instance may have room now.
      if (waiting >= options.maxWaiting) throw new AppError(refusals.full);
      waiting++;
      const list = own ?? [];
      list.push(deadline);
      if (!own) byPrincipal.set(principal, list);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        waiting--;
        list.splice(list.indexOf(deadline), 1);
        if (list.length === 0 && byPrincipal.get(principal) === list) byPrincipal.delete(principal);
      };
    },
  };
}
