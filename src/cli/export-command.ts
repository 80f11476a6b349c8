// `plant-store export`: every plant (or those --q finds) as JSON Lines on stdout, in id order or --sort's, by
// keyset pages (constant memory).
import { plantJsonLine } from '../bulk/records.js';
import { loadConfig } from '../config.js';
import { PLANT_ORDERS, type PlantOrder, type PlantQuery } from '../plants/plant.js';
import { SEARCH_MIN_LENGTH, searchTextProblem } from '../plants/plant-search.js';
import { openCommandStore } from './database.js';
import { commandArgs, UsageError } from './subcommand.js';

export const EXPORT_HELP = `Usage: plant-store export [--q TEXT] [--sort=id|-id|name|-name]

Writes every plant in the store at DATABASE_URL to stdout as JSON Lines, in id order, one
{"id":..,"name":..,"tag":..} object a line with ids digit for digit: the input plant-store import reads.
It reads page by page, so a running server keeps serving; plants written meanwhile may or may not appear.
The database is named on stderr; a SQLite file that does not exist is refused, not created.
--q TEXT   only plants whose name contains TEXT (ignoring case and accents, at least ${SEARCH_MIN_LENGTH} characters), as GET /plants?q=
--sort=S   the order, as GET /plants?sort=: id (default), -id, name (as a person reads: folded name, name, id), -name
A reader that stops early (plant-store export | head -1) ends the export quietly, with exit code 0.
Exit codes: 0 done, or the reader stopped; 1 the store could not be opened; 2 usage; 3 stopped before the
end (write or read error).
`;

const PAGE = 1000;

export async function exportCommand(args: string[]): Promise<number> {
  const parsed = commandArgs('export', args, { q: { type: 'string' }, sort: { type: 'string' } }, EXPORT_HELP);
  if (!parsed) return 0;
  if (parsed.positionals.length > 0) throw new UsageError(`Unexpected argument "${parsed.positionals[0]}" for "export".`, 'export');
  const { q, sort = 'id' } = parsed.values as { q?: string; sort?: string };
  if (!(PLANT_ORDERS as readonly string[]).includes(sort)) throw new UsageError(`--sort must be one of ${PLANT_ORDERS.join(', ')}, not "${sort}".`, 'export');
  const qProblem = q === undefined ? undefined : searchTextProblem(q);
  if (qProblem !== undefined) throw new UsageError(`--q: ${qProblem}`, 'export');
  const order = sort as PlantOrder;
  const { store } = await openCommandStore(loadConfig(), { create: false });
  // A stream error after the one a write reports (a second EPIPE) must not surface as an uncaught error.
  process.stdout.on('error', () => {});
  let written = 0;
  try {
    let cursor: Pick<PlantQuery, 'after' | 'afterName'> = {};
    for (;;) {
      const plants = await store.listPlants({ ...cursor, order, ...(q !== undefined && { q }), limit: PAGE });
      if (plants.length === 0) break;
      await write(plants.map(plantJsonLine).join(''));
      written += plants.length;
      if (plants.length < PAGE) break;
      const last = plants[plants.length - 1]!;
      cursor = order === 'name' || order === '-name' ? { after: last.id, afterName: last.name } : { after: last.id };
    }
    return 0;
  } catch (err) {
    // A reader that went away (export | head) took what it wanted: not an error, as for cat or grep.
    if ((err as { code?: string }).code === 'EPIPE') return 0;
    process.stderr.write(`plant-store: The export stopped after ${written} plants: ${(err as Error).message}\n`);
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
