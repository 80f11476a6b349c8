// SIGHUP (what `systemctl reload` sends): the server starts the code now at the path it was started from (a
// release switched by a symlink), which takes over from it as any server started with the same settings does
// (process/takeover.ts). Until the new one takes over, this one serves; if it fails, this one goes on.
import { spawn, type ChildProcess } from 'node:child_process';
import { lstatSync, realpathSync } from 'node:fs';
import { sep } from 'node:path';
import type { Logger } from 'pino';

/**
 * The command that started this server, through the path it was given: the script as named (a symlinked release
 * is not resolved), and the Node.js of that release when it came with it (the `node` package beside the
 * install), else this Node.js. Read at start-up: once the link is switched it resolves elsewhere.
 */
function startCommand(): { node: string; args: string[] } {
  const script = process.argv[1] ?? '';
  const node = throughLink(script, process.execPath) ?? process.execPath;
  return { node, args: [...process.execArgv, script, ...process.argv.slice(2)] };
}

/**
 * `file` named through the first symlinked folder on `path`'s way (a release's `current`), when `file` lies in
 * the folder that link points to now; undefined otherwise.
 */
function throughLink(path: string, file: string): string | undefined {
  const parts = path.split(sep);
  for (let i = 2; i < parts.length; i++) {
    const at = parts.slice(0, i).join(sep);
    try {
      if (!lstatSync(at).isSymbolicLink()) continue;
      const target = realpathSync(at);
      return file.startsWith(target + sep) ? at + file.slice(target.length) : undefined;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/**
 * Heeds SIGHUP from now on. `possible` says why a reload cannot be done (PORT=0, a database in memory), if so;
 * `handedOver` whether a new server has taken over already. Returns the removal of the handler.
 */
export function reloadOnHangup(log: Logger, possible: string | undefined, handedOver: () => boolean): () => void {
  const command = startCommand();
  let starting: ChildProcess | undefined;
  const onHangup = () => {
    if (possible !== undefined) {
      log.warn({ signal: 'SIGHUP' }, `cannot reload: ${possible}; restart the server instead`);
      return;
    }
    if (starting || handedOver()) {
      log.info({ signal: 'SIGHUP' }, 'a reload is under way already');
      return;
    }
    log.info({ signal: 'SIGHUP', node: command.node, args: command.args }, 'reloading: starting the code now at the path this server was started from; it takes over once it is ready');
    // Its own session: it outlives this process, and signals meant for this one's group are not its.
    const child = spawn(command.node, command.args, { stdio: 'inherit', detached: true });
    starting = child;
    child.unref();
    child.once('error', (err) => log.error({ err }, 'reload failed: the new server could not be started; this one goes on serving'));
    child.once('exit', (code, signal) => {
      starting = undefined;
      if (!handedOver()) log.error({ code, signal }, 'reload failed: the new server stopped before it took over (its reason is above); this one goes on serving');
    });
  };
  process.on('SIGHUP', onHangup);
  return () => process.off('SIGHUP', onHangup);
}
