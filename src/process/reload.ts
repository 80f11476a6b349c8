// SIGHUP (what `systemctl reload` sends): the server starts the code now at the path it was started from (a
// release switched by a symlink), which takes over from it as any server started with the same settings does
// (process/takeover.ts). Until the new one takes over, this one serves; if it fails, this one goes on.
import { spawn, type ChildProcess } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { dirname, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';

/** This release's folder, as the file system has it (dist/src/process/ is three folders below it). */
const RELEASE = realpathSync(fileURLToPath(new URL('../../../', import.meta.url))).replace(/[/\\]$/, '');

/**
 * The command that started this server, through the path it was given: the script as named (a symlinked release
 * is not resolved), and Node.js at the same place under that path when it came with the release (the `node`
 * package), else this Node.js. Read at start-up: once the link is switched it resolves elsewhere.
 */
function startCommand(): { node: string; args: string[] } {
  const script = process.argv[1] ?? '';
  let linked: string | undefined;
  for (let at = dirname(script); ; at = dirname(at)) {
    try {
      if (realpathSync(at) === RELEASE) {
        linked = at;
        break;
      }
    } catch {
      // Not there any more: nothing to match.
    }
    if (dirname(at) === at) break;
  }
  const node = linked !== undefined && process.execPath.startsWith(RELEASE + sep) ? linked + process.execPath.slice(RELEASE.length) : process.execPath;
  return { node, args: [...process.execArgv, script, ...process.argv.slice(2)] };
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
