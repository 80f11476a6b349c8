// Upgrade by takeover: a server started with the DATABASE_URL, HOST and PORT of one already running finds it by a
// control socket named after the three, listens beside it (SO_REUSEPORT), and once ready tells it to hand over;
// the running one stops accepting, serves what it already has, stops its background work, closes its store and
// says it is done. The socket lives in an owner-only folder, so only the same user can take over (SO_REUSEPORT
// asks the same of the port). Messages are lines of JSON; each side answers only what the other asked.
import { createHash } from 'node:crypto';
import { chmodSync, lstatSync, rmSync, writeFileSync, renameSync, readFileSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { maskUrl, type Config } from '../config.js';
import { databaseFile } from '../storage/engines.js';
import { processSharing } from '../storage/open-store.js';
import { FILE_MODE, FOLDER_MODE, makeFolders } from '../kit/owner-only-files.js';
import { VERSION } from '../health/version.js';
import type { Logger } from 'pino';

/** Linux 5.14+: connections queued on a closing SO_REUSEPORT socket move to another of its group when 1. */
const MIGRATE_REQUESTS = '/proc/sys/net/ipv4/tcp_migrate_req';

/** How long a question to the running server waits for its answer. */
const ANSWER_TIMEOUT_MS = 5_000;
/** How long past its own shutdown timeout a server taking over waits for the running one to say it is done. */
const HANDOVER_MARGIN_MS = 10_000;

/** The server found at the control socket. */
export interface RunningServer {
  readonly pid: number;
  readonly version: string;
}

/** What the running server is told: who takes over, and where to say that it is done. */
export interface Handover {
  readonly by: number;
  /** The handover is complete (requests served, work stopped, store closed): the new server goes on alone. */
  done(code: number): void;
}

type Message = { ask: 'who' } | { ask: 'hand-over'; pid: number } | (RunningServer & { answer: 'who' }) | { answer: 'accepted' } | { answer: 'done'; code: number };

/** The control socket of the server for these settings (not PORT=0, nor a database in memory). */
function controlPath(config: Config): string {
  const file = databaseFile(config.databaseUrl);
  // The file's absolute path, or the URL with its password masked: the name never carries a secret.
  const store = file === undefined ? maskUrl(config.databaseUrl) : resolve(file);
  const key = createHash('sha256').update(`${store}\n${config.host}\n${config.port}`).digest('hex').slice(0, 24);
  return join(config.runtimeDirectory || temporaryFolder(), `serve-${key}.sock`);
}

/** An owner-only folder of this user's under the temporary one. */
function temporaryFolder(): string {
  const uid = process.getuid?.() ?? 0;
  const folder = join(tmpdir(), `plant-store-${uid}`);
  makeFolders(folder, FOLDER_MODE);
  // Another user may have made it first, to listen in our place: then nothing is offered or asked there.
  const stat = lstatSync(folder);
  if (!stat.isDirectory() || stat.uid !== uid || (stat.mode & 0o077) !== 0) throw new Error(`${folder} is not an owner-only folder of this user`);
  return folder;
}

/** One line of JSON each way over `socket`. */
function lines(socket: Socket) {
  const queue: Message[] = [];
  const waiting: ((m: Message | undefined) => void)[] = [];
  let ended = false;
  const rl = createInterface({ input: socket });
  rl.on('line', (line) => {
    let m: Message;
    try {
      m = JSON.parse(line) as Message;
    } catch {
      socket.destroy();
      return;
    }
    const w = waiting.shift();
    if (w) w(m);
    else queue.push(m);
  });
  const end = () => {
    ended = true;
    for (const w of waiting.splice(0)) w(undefined);
  };
  socket.on('close', end);
  socket.on('error', () => {});
  return {
    send: (m: Message) => socket.write(`${JSON.stringify(m)}\n`),
    /** The next message; undefined once the other side is gone, or after `ms`. */
    next(ms: number): Promise<Message | undefined> {
      const m = queue.shift();
      if (m || ended) return Promise.resolve(m);
      return new Promise((resolve) => {
        const timer = setTimeout(() => {
          waiting.splice(waiting.indexOf(settle), 1);
          resolve(undefined);
        }, ms);
        const settle = (m: Message | undefined) => {
          clearTimeout(timer);
          resolve(m);
        };
        waiting.push(settle);
      });
    },
  };
}

function open(path: string): Promise<Socket | undefined> {
  return new Promise((resolve, reject) => {
    const socket = connect(path);
    socket.once('connect', () => resolve(socket));
    socket.once('error', (err: NodeJS.ErrnoException) => {
      // No socket, or one left by a server that was killed: nobody runs there.
      if (err.code === 'ENOENT' || err.code === 'ECONNREFUSED') resolve(undefined);
      else reject(err);
    });
  });
}

/** The server running at `path`, if one does. */
export async function findRunning(path: string): Promise<RunningServer | undefined> {
  const socket = await open(path);
  if (!socket) return undefined;
  try {
    const talk = lines(socket);
    talk.send({ ask: 'who' });
    const m = await talk.next(ANSWER_TIMEOUT_MS);
    if (!m || !('answer' in m) || m.answer !== 'who') throw new Error(`the server at ${path} did not say who it is`);
    return { pid: m.pid, version: m.version };
  } finally {
    socket.destroy();
  }
}

/**
 * Tells the server at `path` to hand over and waits until it is done, for at most `ms` after it accepted (its
 * own shutdown timeout bounds its drain). Resolves with its exit code, or 'gone' when it went away without
 * saying (it was killed, or had stopped already).
 */
export async function takeOver(path: string, ms: number): Promise<number | 'gone'> {
  const socket = await open(path);
  if (!socket) return 'gone';
  try {
    const talk = lines(socket);
    talk.send({ ask: 'hand-over', pid: process.pid });
    const accepted = await talk.next(ANSWER_TIMEOUT_MS);
    if (!accepted || !('answer' in accepted) || accepted.answer !== 'accepted') return 'gone';
    const done = await talk.next(ms);
    return done && 'answer' in done && done.answer === 'done' ? done.code : 'gone';
  } finally {
    socket.destroy();
  }
}

/** A running server's side: answers who it is, and resolves `requested` when a new server asks it to hand over. */
export interface HandoverOffer {
  readonly requested: Promise<Handover>;
  /** No more offers: the socket stops listening at once (a connection still open is left to end). */
  close(): void;
}

export async function offerHandover(path: string): Promise<HandoverOffer> {
  let request!: (h: Handover) => void;
  const requested = new Promise<Handover>((resolve) => (request = resolve));
  let asked = false;
  const server: Server = createServer((socket) => {
    const talk = lines(socket);
    void (async () => {
      for (;;) {
        const m = await talk.next(ANSWER_TIMEOUT_MS * 60);
        if (!m || !('ask' in m)) return socket.destroy();
        if (m.ask === 'who') talk.send({ answer: 'who', pid: process.pid, version: VERSION });
        else if (m.ask === 'hand-over' && !asked) {
          asked = true;
          // The name is given up first (at once: the close completes only once this connection ends too), so
          // that the new server can offer its own once this one is done.
          close();
          talk.send({ answer: 'accepted' });
          request({
            by: m.pid,
            done: (code) => {
              talk.send({ answer: 'done', code });
              socket.end();
            },
          });
          return;
        } else return socket.destroy();
      }
    })();
  });
  const close = () => {
    if (server.listening) server.close();
  };
  await new Promise<void>((resolve, reject) => {
    const listen = (again: boolean) => {
      server.once('error', (err: NodeJS.ErrnoException) => {
        // A socket file left by a server that was killed (nobody answers on it: findRunning said so).
        if (err.code === 'EADDRINUSE' && again) {
          rmSync(path, { force: true });
          listen(false);
        } else reject(err);
      });
      server.listen(path, () => {
        // Owner-only whatever the umask (the folder should be too): who may connect may stop this server.
        chmodSync(path, FILE_MODE);
        resolve();
      });
    };
    listen(true);
  });
  return { requested, close };
}

function readSetting(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/**
 * PID_FILE: this process's id, written whole (renamed into place) once it serves, so that systemd's PIDFile= follows
 * a reload to the new process. Returns its removal, which leaves a file another process has written since.
 */
export function writePidFile(path: string): () => void {
  const partial = `${path}.${process.pid}`;
  writeFileSync(partial, `${process.pid}\n`, { mode: FILE_MODE });
  renameSync(partial, path);
  return () => {
    try {
      if (readFileSync(path, 'utf8').trim() === String(process.pid)) rmSync(path, { force: true });
    } catch {
      // Gone already.
    }
  };
}

/** How a starting server comes to serve: alone at its address, or by taking over from the one running there. */
export interface Succession {
  /** The control socket for these settings; undefined where none can be (`impossible` says why). */
  readonly control?: string;
  readonly impossible?: string;
  /** The server running with these settings now, which this one takes over from once ready. */
  readonly running?: RunningServer;
}

/** Looks for a server running with these settings. */
export async function findSuccession(config: Config, log: Logger): Promise<Succession> {
  if (config.port === 0) return { impossible: 'PORT=0 gives every start a port of its own' };
  if (processSharing(config.databaseUrl) === 'one-process') return { impossible: 'a database in memory is not seen by another process' };
  let control: string | undefined;
  try {
    control = controlPath(config);
  } catch (err) {
    log.warn({ err }, 'no takeover: the control socket has no safe folder (set RUNTIME_DIRECTORY to an owner-only one)');
    return { impossible: (err as Error).message };
  }
  const running = control === undefined ? undefined : await findRunning(control);
  if (running && readSetting(MIGRATE_REQUESTS) === '0')
    log.warn('net.ipv4.tcp_migrate_req is 0: a connection arriving just as the old server stops listening may be reset; set it to 1 (docs/operations.md)');
  return { control, running };
}

/**
 * Once this server is ready (listening beside the running one): takes over from the running one, if any, and
 * waits until it is done (its drain is bounded by its SHUTDOWN_TIMEOUT_MS, taken to be this one's); then offers
 * its own handover to the next.
 */
export async function takeOverThenOffer(s: Succession, shutdownTimeoutMs: number, log: Logger): Promise<HandoverOffer | undefined> {
  if (s.control === undefined) return undefined;
  if (s.running) {
    const started = Date.now();
    log.info({ pid: s.running.pid, version: s.running.version }, 'ready beside the running server: telling it to hand over');
    const code = await takeOver(s.control, shutdownTimeoutMs + HANDOVER_MARGIN_MS);
    const ms = Date.now() - started;
    if (code === 'gone') log.warn({ pid: s.running.pid, ms }, 'took over: the previous server went away without saying it was done');
    else log.info({ pid: s.running.pid, code, ms }, 'took over: the previous server handed over and stopped');
  }
  return offerHandover(s.control).catch((err: unknown) => {
    log.warn({ err }, 'no takeover of this server will be possible: its control socket could not be made');
    return undefined;
  });
}
