// `plant-store export`: every plant as JSON Lines on stdout, in id order, by keyset pages (constant memory).
import { parseArgs } from 'node:util';
import { plantJsonLine } from '../bulk/records.js';
import { loadConfig } from '../config.js';
import { openStore, storeOptions } from '../storage/open-store.js';
import { UsageError } from './main.js';

export const EXPORT_HELP = `Usage: plant-store export

Writes every plant in the store at DATABASE_URL to stdout as JSON Lines, in id order, one
{"id":..,"name":..,"tag":..} object a line with ids digit for digit: the input plant-store import reads.
It reads page by page, so a running server keeps serving; plants written meanwhile may or may not appear.
Exit codes: 0 done; 1 the store could not be opened; 2 usage; 3 stopped before the end (write or read error).
`;

const PAGE = 1000;

export async function exportCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args, options: { help: { type: 'boolean', short: 'h' } }, strict: true, allowPositionals: true });
  if (values.help) {
    process.stdout.write(EXPORT_HELP);
    return 0;
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
  const config = loadConfig();
  const { store } = await openStore(config.databaseUrl, storeOptions(config));
  let written = 0;
  try {
    let after: bigint | undefined;
    for (;;) {
      const plants = await store.listPlants({ after, limit: PAGE });
      if (plants.length === 0) break;
      await write(plants.map(plantJsonLine).join(''));
      written += plants.length;
      if (plants.length < PAGE) break;
      after = plants[plants.length - 1]!.id;
    }
    return 0;
  } catch (err) {
    // A reader that went away (export | head) is not worth a message; anything else is.
    if ((err as { code?: string }).code !== 'EPIPE') {
      process.stderr.write(`plant-store: export stopped after ${written} plants: ${(err as Error).message}\n`);
    }
    return 3;
  } finally {
    await store.close();
  }
}

function write(text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error) => reject(err);
    process.stdout.once('error', onError);
    const flushed = process.stdout.write(text, (err) => {
      process.stdout.off('error', onError);
      if (err) reject(err);
      else resolve();
    });
    void flushed;
  });
}
