// Pipelining by RFC 9112: the requests of one connection are handled one at a time, in the order they arrived,
// and nothing behind an answer that closes the connection is handled at all (sections 9.3.2 and 9.6). Node's
// HTTP server hands every pipelined request to the app at once, so a GET could read before the POST ahead of
// it committed, and a DELETE behind a `Connection: close` answer ran with no one to tell.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** Requests waiting behind the one in progress on a connection; absent while none is in progress. */
const kWaiting = Symbol('plant-store requests waiting on this connection');
/** The answer in progress on a connection. */
const kCurrent = Symbol('plant-store answer in progress on this connection');
/** Set once an answer closed the connection: later requests on it are never handled. */
const kClosed = Symbol('plant-store connection closed by an answer');
type QueuedSocket = Socket & { [kWaiting]?: [IncomingMessage, ServerResponse][]; [kCurrent]?: ServerResponse; [kClosed]?: true };

/** The answers each connection still owes, for a graceful shutdown (server.ts). */
export interface AnswersOwed {
  /** Whether `socket` has a request in progress (and perhaps more waiting behind it). */
  busy(socket: Socket): boolean;
  /** The last answer `socket` owes: the one in progress, or the last of those waiting behind it; none when idle. */
  last(socket: Socket): ServerResponse | undefined;
  /**
   * Offered each request, in its turn, before the app: answers it and returns true, or leaves it to the app
   * (false, or a promise of false). read-lane.ts.
   */
  lane?: Lane;
}

export type Lane = (req: IncomingMessage, res: ServerResponse) => boolean | Promise<boolean>;

/**
 * Wraps the server's one request listener (the app's) so that each connection's requests reach it in order,
 * each once the answer before it is written. Serializing safe requests too costs nothing a client can see:
 * their answers had to leave in order anyway. Other listeners still see every request as it arrives. What each
 * connection still owes is kept here, once, for a graceful shutdown.
 */
export function answerInOrder(server: Server): AnswersOwed {
  const listeners = server.listeners('request') as ((req: IncomingMessage, res: ServerResponse) => void)[];
  if (listeners.length !== 1) throw new Error(`answerInOrder: expected the app's request listener alone, found ${listeners.length}`);
  const handle = listeners[0]!;
  server.removeListener('request', handle);
  // A client may send its requests and then close its sending side (`nc -N`): Node would drop those still
  // waiting; half-open, it answers each and closes after the last.
  (server as Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
  // Marked on the socket rather than kept in a set: a set's add and delete on every request keep growing,
  // rehashing and shrinking its table at a few hundred connections, and each table V8 outgrows has already
  // reached the old generation (about a fifth of the garbage a GET promoted there, measured).
  const idle = (socket: QueuedSocket) => {
    socket[kWaiting] = undefined;
    socket[kCurrent] = undefined;
  };

  // A lane that failed before answering leaves the request to the app, which answers every failure.
  const laneFailed = (req: IncomingMessage, res: ServerResponse, err: Error) => (res.headersSent ? res.destroy(err) : handle.call(server, req, res));

  const start = (socket: QueuedSocket, req: IncomingMessage, res: ServerResponse) => {
    let settled = false;
    const next = () => {
      if (settled) return;
      settled = true;
      const waiting = socket[kWaiting]!;
      // Node ends the socket's writable side as it finishes an answer that says `Connection: close` (or one
      // to a request that asked for close); a destroyed socket has no one to answer either.
      if (!socket.writable || socket.destroyed) {
        socket[kClosed] = true;
        idle(socket);
        for (const [queued] of waiting) queued.resume();
        return;
      }
      const following = waiting.shift();
      if (following) start(socket, following[0], following[1]);
      else idle(socket);
    };
    socket[kCurrent] = res;
    res.once('finish', next);
    res.once('close', next);
    const lane = owed.lane;
    let took: boolean | Promise<boolean> = false;
    if (lane !== undefined) {
      try {
        took = lane(req, res);
      } catch (err) {
        laneFailed(req, res, err as Error);
        return;
      }
    }
    if (took === false) handle.call(server, req, res);
    else if (took !== true) took.then((t) => t || handle.call(server, req, res), (err: Error) => laneFailed(req, res, err));
  };

  const owed: AnswersOwed = {
    busy(socket: QueuedSocket) {
      return socket[kWaiting] !== undefined;
    },
    last(socket: QueuedSocket) {
      return socket[kWaiting]?.at(-1)?.[1] ?? socket[kCurrent];
    },
  };
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket as QueuedSocket;
    if (socket[kClosed]) {
      // Arrived behind an answer that closed the connection: neither handled nor answered (RFC 9112 9.6).
      req.resume();
      return;
    }
    const waiting = socket[kWaiting];
    if (waiting) {
      waiting.push([req, res]);
      return;
    }
    socket[kWaiting] = [];
    start(socket, req, res);
  });
  return owed;
}
