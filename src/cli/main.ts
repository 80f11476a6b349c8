// `plant-store` command: serve | migrate | config | token create|list|revoke |
// webhook add|list|remove|deliveries|retry|recover|enable | secrets status|rotate | import | export | backup | restore |
// replica status. Exit codes: 0 ok, 1 failed, 2 usage
// (import and export add 3: stopped part way; see their --help).
import { describeConfig, loadConfig, SETTINGS } from '../config.js';
import { tokenCommand, TOKEN_HELP } from './token-command.js';
import { openCommandStore } from './database.js';
import { COMMAND, commandArgs, failureMessage, UsageError } from './subcommand.js';

const HELP = `plant-store: the Plant Store API service

Usage: plant-store <command> [options]

Commands:
  serve       Start the HTTP service (applies pending migrations first)
  migrate     Apply pending database migrations and exit
  config      Print the effective configuration (secrets masked)
  token       Manage API tokens: create, list, revoke (see plant-store token --help)
  webhook     Manage plant event webhook subscriptions: add, list, remove, deliveries, retry,
              recover, enable (see plant-store webhook --help)
  secrets     Webhook signing secrets at rest: status (which key each is under), rotate (encrypt
              them under the first WEBHOOK_SECRET_KEYS key; see plant-store secrets --help)
  import      Add plants from a JSON Lines or CSV file (see plant-store import --help)
  export      Write every plant to stdout as JSON Lines (see plant-store export --help)
  backup      Copy the SQLite store to a file while it serves (see plant-store backup --help)
  restore     Replace a stopped SQLite store with a backup, or with what its replicas hold
              (--from-replica [--at TIME]; see plant-store restore --help)
  replica     The Litestream replicas of REPLICA_URL: status (latest sync, lag, size; see
              plant-store replica --help)

plant-store --version prints the version.

Every command reads its configuration from the environment (PORT=9090 npx plant-store serve); see
plant-store config --help. Commands that use the database name it on stderr. Run plant-store <command>
--help for a command's options.
`;

const SERVE_HELP = `Usage: plant-store serve

Starts the HTTP service on HOST:PORT with the store at DATABASE_URL, applying pending migrations and
encrypting every webhook signing secret not under the first key of WEBHOOK_SECRET_KEYS again under it.
On a store with no tokens it creates one and prints it once. SIGTERM or SIGINT stop it gracefully.
It takes no options: settings come from the environment, e.g. PORT=9090 HOST=0.0.0.0 ${COMMAND} serve
(see plant-store config --help).
`;

const MIGRATE_HELP = `Usage: plant-store migrate [--after-restore]

Applies pending migrations to the store at DATABASE_URL (creating it if needed) and exits.
Exits 1, naming the migration and the error, if one fails; nothing of a failed migration is kept.

Options:
  --after-restore   The store was just restored from a backup by other means (pg_restore, point-in-time
                    recovery, a copy of a stopped SQLite file): run it once, before any server uses the
                    store. It moves the version counter above anything issued before the restore (to at
                    least the time in microseconds), so no ETag or event version is issued again, and
                    records the restore, so that feed cursors made after the backup answer 410
                    (docs/backup.md). The store must exist. plant-store restore does this itself.
`;

/** The variables' column: the longest name and two spaces. */
const NAME_WIDTH = Math.max(...SETTINGS.map((s) => s.env.length)) + 2;

const CONFIG_HELP = `Usage: plant-store config

Prints the effective configuration, one VARIABLE=value a line, secrets masked. Variables:
${SETTINGS.map((s) => `  ${s.env.padEnd(NAME_WIDTH)}${s.description} (default ${String(s.default)})`).join('\n')}
`;

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case undefined:
      case '-h':
      case '--help':
      case 'help':
        process.stdout.write(HELP);
        return command === undefined ? 2 : 0;
      case 'serve': {
        if (wantsHelp('serve', rest, SERVE_HELP)) return 0;
        const config = loadConfig();
        // The server's output is JSON log lines: its start line names the database (config.databaseUrl).
        // The web stack is loaded only to serve: every other command starts in a fraction of the time.
        const { serve } = await import('../process/server.js');
        return await serve(config);
      }
      case 'migrate': {
        const parsed = commandArgs('migrate', rest, { 'after-restore': { type: 'boolean' } }, MIGRATE_HELP);
        if (!parsed) return 0;
        if (parsed.positionals.length > 0) throw new UsageError(`Unexpected argument "${parsed.positionals[0]}" for "migrate".`, 'migrate');
        return await migrate(parsed.values['after-restore'] === true);
      }
      case 'config':
        if (wantsHelp('config', rest, CONFIG_HELP)) return 0;
        process.stdout.write(describeConfig(loadConfig()).join('\n') + '\n');
        return 0;
      case 'token':
        if (rest.length === 0 || (rest.length === 1 && ['-h', '--help'].includes(rest[0]!))) {
          process.stdout.write(TOKEN_HELP);
          return rest.length === 0 ? 2 : 0;
        }
        return await tokenCommand(rest, loadConfig());
      case 'webhook': {
        // Loaded only by this command, like the web stack by serve.
        const { webhookCommand, WEBHOOK_HELP } = await import('./webhook-command.js');
        if (rest.length === 0 || (rest.length === 1 && ['-h', '--help'].includes(rest[0]!))) {
          process.stdout.write(WEBHOOK_HELP);
          return rest.length === 0 ? 2 : 0;
        }
        return await webhookCommand(rest, loadConfig());
      }
      case 'secrets': {
        const { secretsCommand, SECRETS_HELP } = await import('./secrets-command.js');
        if (rest.length === 0 || (rest.length === 1 && ['-h', '--help'].includes(rest[0]!))) {
          process.stdout.write(SECRETS_HELP);
          return rest.length === 0 ? 2 : 0;
        }
        return await secretsCommand(rest, loadConfig());
      }
      case 'import': {
        // Loaded only by these commands, like the web stack by serve.
        const { importCommand } = await import('./import-command.js');
        return await importCommand(rest);
      }
      case 'export': {
        const { exportCommand } = await import('./export-command.js');
        return await exportCommand(rest);
      }
      case 'backup': {
        const { backupCommand } = await import('./backup-command.js');
        return await backupCommand(rest);
      }
      case 'restore': {
        const { restoreCommand } = await import('./backup-command.js');
        return await restoreCommand(rest);
      }
      case 'replica': {
        const { replicaCommand, REPLICA_HELP } = await import('./replica-command.js');
        if (rest.length === 0 || (rest.length === 1 && ['-h', '--help'].includes(rest[0]!))) {
          process.stdout.write(REPLICA_HELP);
          return rest.length === 0 ? 2 : 0;
        }
        return await replicaCommand(rest, loadConfig());
      }
      default:
        throw new UsageError(`Unknown command "${command}".`);
    }
  } catch (err) {
    process.stderr.write(`plant-store: ${failureMessage(err)}\n`);
    if (err instanceof UsageError) {
      process.stderr.write(`Run ${COMMAND} ${err.command ? `${err.command} ` : ''}--help for usage.\n`);
      return 2;
    }
    return 1;
  }
}

/** A command that takes only --help; true when it was asked for (and printed). */
function wantsHelp(command: string, args: string[], help: string): boolean {
  const parsed = commandArgs(command, args, {}, help);
  if (parsed === undefined) return true;
  if (parsed.positionals.length > 0) throw new UsageError(`Unexpected argument "${parsed.positionals[0]}" for "${command}".`, command);
  return false;
}

const STATUS_WORDS: Record<string, string> = { 'already-applied': 'already applied' };

async function migrate(afterRestore: boolean): Promise<number> {
  // A restored store exists: one created now would be a mistake in DATABASE_URL.
  const { store, migrations } = await openCommandStore(loadConfig(), { create: !afterRestore });
  let restored = '';
  try {
    if (afterRestore) {
      const [{ markRestored }, { describeRestore }] = await Promise.all([import('../storage/restores.js'), import('./backup-command.js')]);
      restored = describeRestore(await markRestored(store.restores, new Date()));
    }
  } finally {
    await store.close();
  }
  for (const m of migrations) process.stdout.write(`${String(m.version).padStart(4, '0')} ${m.name}: ${STATUS_WORDS[m.status] ?? m.status}\n`);
  process.stdout.write(restored);
  return 0;
}
