// What every `plant-store <command> [<subcommand>]` shares: its arguments, read before touching the database
// (--help prints the usage, and an option the command does not take is a usage error worded one way for every
// command; an option named after a setting points at the environment variable instead), and its failures,
// worded one way on stderr.
import { parseArgs } from 'node:util';
import { ConfigError, SETTINGS } from '../config.js';
import { StoreUnavailableError } from '../errors/store-errors.js';
import { MigrationError } from '../storage/migrator.js';

/** How users run the command after `npm ci` or a tarball install; every hint in a message says it so. */
export const COMMAND = 'npx plant-store';

/** Bad arguments: exit 2, with a hint to the usage of `command` ("token create", or "" for the top level). */
export class UsageError extends Error {
  override name = 'UsageError';
  constructor(
    message: string,
    readonly command = '',
  ) {
    super(message);
  }
}

type OptionTypes = Record<string, { type: 'string' | 'boolean' }>;
type Values<T extends OptionTypes> = { [K in keyof T]?: T[K]['type'] extends 'string' ? string : boolean };

/**
 * parseArgs with the CLI's wording: `--help`/`-h` is always known, and any option not in `options` is an
 * "Unknown option" of `command`. Returns undefined when --help was asked for (and `help` printed).
 */
export function commandArgs<T extends OptionTypes>(
  command: string,
  args: string[],
  options: T,
  help: string,
): { values: Values<T>; positionals: string[] } | undefined {
  let parsed;
  try {
    parsed = parseArgs({ args, options: { help: { type: 'boolean', short: 'h' }, ...options }, strict: true, allowPositionals: true });
  } catch (err) {
    throw usageOf(err as Error & { code?: string }, command, args);
  }
  const values = parsed.values as Record<string, string | boolean | undefined>;
  if (values.help) {
    process.stdout.write(help);
    return undefined;
  }
  return { values: values as Values<T>, positionals: parsed.positionals };
}

/** commandArgs for a command that takes some of a shared option table: the others are unknown to it. */
export function subcommandArgs<T extends OptionTypes>(
  command: string,
  args: string[],
  options: T,
  takes: readonly string[],
  help: string,
): { values: Values<T>; positionals: string[] } | undefined {
  const own = Object.fromEntries(Object.entries(options).filter(([name]) => takes.includes(name))) as T;
  return commandArgs(command, args, own, help);
}

function usageOf(err: Error & { code?: string }, command: string, args: string[]): Error {
  const quoted = /'(-[^' ]+)/.exec(err.message)?.[1];
  switch (err.code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return new UsageError(unknownOption(quoted ?? '?', command, args), command);
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE':
      return new UsageError(
        /argument missing/.test(err.message)
          ? `Option ${quoted} needs a value.`
          : /ambiguous/.test(err.message)
            ? `Option ${quoted} needs a value; one that starts with "-" is given as ${quoted}=VALUE.`
            : `Option ${quoted} takes no value.`,
        command,
      );
    default:
      return err;
  }
}

/** "Unknown option --port for serve."; for an option named like a setting, how to set that setting. */
function unknownOption(option: string, command: string, args: string[]): string {
  const name = option.replace(/^-+/, '');
  const text = `Unknown option ${option} for ${command ? `"${command}"` : 'plant-store'}.`;
  const setting = SETTINGS.find((s) => s.env === name.toUpperCase().replace(/-/g, '_'));
  if (!setting) return text;
  const at = args.findIndex((a) => a === option || a.startsWith(`${option}=`));
  const inline = at === -1 ? undefined : /=(.*)$/.exec(args[at]!)?.[1];
  const next = args[at + 1];
  const value = inline ?? (at !== -1 && next !== undefined && !next.startsWith('-') ? next : 'VALUE');
  return `${text} Settings come from the environment: ${setting.env}=${value} ${COMMAND} ${command}`.trimEnd() + '.';
}

/** "the store is unavailable" -> "The store is unavailable."; messages on stderr are sentences. */
export function sentence(text: string): string {
  const t = text.trim();
  if (t === '') return t;
  const first = t[0]!.toUpperCase() + t.slice(1);
  return /[.!?]$/.test(first) ? first : `${first}.`;
}

/** What went wrong, as sentences; a store's failure with the driver's own words behind it. */
export function failureMessage(err: unknown): string {
  if (err instanceof StoreUnavailableError && err.cause instanceof Error) {
    return `${sentence(err.message).slice(0, -1)} (${err.cause.message.replace(/\.$/, '')}).`;
  }
  // Worded by the settings table and the migrator, which tests and operators match as they are.
  if (err instanceof ConfigError || err instanceof MigrationError) return err.message;
  return sentence((err as Error).message ?? String(err));
}
