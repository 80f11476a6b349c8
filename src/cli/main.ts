// `plant-store` command: serve | migrate | config | token create|list|revoke |
// webhook add|list|remove|deliveries|retry | import | export. Exit codes: 0 ok, 1 failed, 2 usage
// (import and export add 3: stopped part way; see their --help).
import { parseArgs } from 'node:util';
import { ConfigError, describeConfig, loadConfig, SETTINGS } from '../config.js';
import { MigrationError } from '../storage/migrator.js';
import { openStore, storeOptions } from '../storage/open-store.js';
import { tokenCommand, TOKEN_HELP } from './token-command.js';
import { StoreUnavailableError } from '../storage/errors.js';

const HELP = `plant-store: the Plant Store API service

Usage: plant-store <command> [options]

Commands:
  serve       Start the HTTP service (applies pending migrations first)
  migrate     Apply pending database migrations and exit
  config      Print the effective configuration (secrets masked)
  token       Manage API tokens: create, list, revoke (see plant-store token --help)
  webhook     Manage newPlant webhook subscriptions: add, list, remove, deliveries, retry
              (see plant-store webhook --help)
  import      Add plants from a JSON Lines or CSV file (see plant-store import --help)
  export      Write every plant to stdout as JSON Lines (see plant-store export --help)

Every command reads its configuration from the environment; see plant-store config --help.
Run plant-store <command> --help for a command's options.
`;

const SERVE_HELP = `Usage: plant-store serve

Starts the HTTP service on HOST:PORT with the store at DATABASE_URL, applying pending migrations.
On a store with no tokens it creates one and prints it once. SIGTERM or SIGINT stop it gracefully.
`;

const MIGRATE_HELP = `Usage: plant-store migrate

Applies pending migrations to the store at DATABASE_URL (creating it if needed) and exits.
Exits 1, naming the migration and the error, if one fails; nothing of a failed migration is kept.
`;

const CONFIG_HELP = `Usage: plant-store config

Prints the effective configuration, one VARIABLE=value a line, secrets masked. Variables:
${SETTINGS.map((s) => `  ${s.env.padEnd(31)}${s.description} (default ${String(s.default)})`).join('\n')}
`;

export class UsageError extends Error {}

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
        if (wantsHelp(rest, SERVE_HELP)) return 0;
        const config = loadConfig();
        // The web stack is loaded only to serve: every other command starts in a fraction of the time.
        const { serve } = await import('../server.js');
        return await serve(config);
      }
      case 'migrate':
        if (wantsHelp(rest, MIGRATE_HELP)) return 0;
        return await migrate();
      case 'config':
        if (wantsHelp(rest, CONFIG_HELP)) return 0;
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
      case 'import': {
        // Loaded only by these commands, like the web stack by serve.
        const { importCommand } = await import('./import-command.js');
        return await importCommand(rest);
      }
      case 'export': {
        const { exportCommand } = await import('./export-command.js');
        return await exportCommand(rest);
      }
      default:
        throw new UsageError(`unknown command "${command}"`);
    }
  } catch (err) {
    if (err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`plant-store: ${(err as Error).message}\nRun plant-store --help for usage.\n`);
      return 2;
    }
    if (err instanceof ConfigError || err instanceof MigrationError) {
      process.stderr.write(`plant-store: ${err.message}\n`);
      return 1;
    }
    if (err instanceof StoreUnavailableError && err.cause instanceof Error) {
      process.stderr.write(`plant-store: ${err.message}: ${err.cause.message}\n`);
      return 1;
    }
    process.stderr.write(`plant-store: ${(err as Error).message ?? String(err)}\n`);
    return 1;
  }
}

function wantsHelp(args: string[], help: string): boolean {
  const { values } = parseArgs({ args, options: { help: { type: 'boolean', short: 'h' } }, strict: true, allowPositionals: false });
  if (values.help) process.stdout.write(help);
  return values.help === true;
}

async function migrate(): Promise<number> {
  const config = loadConfig();
  const { store, migrations } = await openStore(config.databaseUrl, storeOptions(config));
  await store.close();
  for (const m of migrations) process.stdout.write(`${String(m.version).padStart(4, '0')} ${m.name}: ${m.status}\n`);
  return 0;
}
