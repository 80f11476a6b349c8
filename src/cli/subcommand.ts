// What every `plant-store <command> <subcommand>` does with its arguments before touching the database:
// --help prints the subcommand's usage, and an option the subcommand does not take is a usage error.
import { parseArgs } from 'node:util';
import { UsageError } from './main.js';

type OptionTypes = Record<string, { type: 'string' | 'boolean' }>;
type Values<T extends OptionTypes> = { [K in keyof T]?: T[K]['type'] extends 'string' ? string : boolean };

/** The parsed options and positionals, or undefined when --help was asked for (and printed). */
export function subcommandArgs<T extends OptionTypes>(
  command: string,
  args: string[],
  options: T,
  takes: readonly string[],
  help: string,
): { values: Values<T>; positionals: string[] } | undefined {
  const parsed = parseArgs({ args, options: { help: { type: 'boolean', short: 'h' }, ...options }, strict: true, allowPositionals: true });
  const values = parsed.values as Record<string, string | boolean | undefined>;
  if (values.help) {
    process.stdout.write(help);
    return undefined;
  }
  const misplaced = Object.keys(values).filter((o) => o !== 'help' && !takes.includes(o));
  if (misplaced.length > 0) throw new UsageError(`${command} does not take --${misplaced[0]}`);
  return { values: values as Values<T>, positionals: parsed.positionals };
}
