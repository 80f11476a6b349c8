// `plant-store import FILE`: streams JSON Lines or CSV into the store in batches, one transaction (and one
// fsync) per batch, by the API's rules. Exit codes: 0 every line imported or already stored identically;
// 1 some lines were conflicts or invalid (everything else committed, as the summary says); 2 usage;
// 3 stopped before the end (the summary says exactly which lines were committed).
import { open } from 'node:fs/promises';
import { extname } from 'node:path';
import { readLines, type Line } from '../bulk/lines.js';
import { CsvHeaderError, CsvParser, isCsvHeader, parseJsonLine, type Parsed } from '../bulk/records.js';
import { loadConfig } from '../config.js';
import type { PlantRecord } from '../plants/plant.js';
import type { Store } from '../storage/store.js';
import { openCommandStore } from './database.js';
import { COMMAND, commandArgs, failureMessage, UsageError } from './subcommand.js';

export const IMPORT_HELP = `Usage: plant-store import [--format jsonl|csv] [--batch-size N] FILE

Adds the plants in FILE (- for standard input) to the store at DATABASE_URL, by the rules of POST /plants.
  JSON Lines (.jsonl, .ndjson; the default for -): one {"id":..,"name":..,"tag":..} object a line, the
      form plant-store export writes. ids are read exactly over the whole int64 range.
  CSV (.csv): a header line naming id,name[,tag]; RFC 4180 quoting ("a, ""b""" for a, "b"). An empty
      tag means no tag.
  --format     jsonl or csv, when the extension does not tell
  --batch-size rows committed per transaction (default 5000)

A plant whose id is already stored with the same name and tag is skipped as identical; with a different
name or tag it is a conflict and skipped. Invalid lines are skipped. Each is reported with its line
number. A newPlant webhook event is recorded for every new plant while a subscription is active.
The database is named on stderr (a new SQLite file is created). Progress goes to stderr (a bar on a
terminal), the summary to stdout. Ctrl-C stops the import after the batch being committed, with the
summary. Exit codes:
  0  every line was imported or already stored identically
  1  some lines were conflicts or invalid; all the others were committed
  2  usage error; nothing was read
  3  the import stopped before the end (Ctrl-C, unreadable input or database, failed commit); the
     summary says which lines were committed. Running the same import again is safe: stored rows
     count as identical.
`;

const LIST_CAP = 50;

class CommitError extends Error {}
/** Ctrl-C (SIGINT): stop after the commit in progress, then report as for any other stop. */
class InterruptedError extends Error {}
/** JSON Lines were expected and line 1 is a CSV header: the user meant --format csv. */
class FormatError extends Error {}

interface Counts {
  imported: number;
  identical: number;
  conflicts: { line: number; id: bigint }[];
  invalid: { line: number; error: string }[];
}

export async function importCommand(args: string[]): Promise<number> {
  const parsed = commandArgs('import', args, { format: { type: 'string' }, 'batch-size': { type: 'string' } }, IMPORT_HELP);
  if (!parsed) return 0;
  const { values, positionals } = parsed;
  const usage = (message: string) => new UsageError(message, 'import');
  if (positionals.length !== 1) throw usage(positionals.length === 0 ? 'Import needs a FILE (- for standard input).' : `Unexpected argument "${positionals[1]}" for "import".`);
  const file = positionals[0]!;
  const format = values.format ?? formatOf(file);
  if (format !== 'jsonl' && format !== 'csv') throw usage(`The --format must be jsonl or csv, not "${format}".`);
  const batchSize = values['batch-size'] === undefined ? 5000 : Number(values['batch-size']);
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 1_000_000) throw usage('The --batch-size must be an integer from 1 to 1000000.');

  const started = Date.now();
  const source = file === '-' ? 'standard input' : file;
  let store: Store;
  let input: AsyncIterable<Buffer>;
  let totalBytes: number | undefined;
  let closeInput = async () => {};
  try {
    const config = loadConfig();
    if (file === '-') {
      input = process.stdin;
    } else {
      const handle = await open(file, 'r');
      closeInput = () => handle.close();
      const stat = await handle.stat();
      if (stat.isFile()) totalBytes = stat.size;
      input = handle.createReadStream({ highWaterMark: 1 << 20, autoClose: false });
    }
    ({ store } = await openCommandStore(config, { create: true }));
  } catch (err) {
    await closeInput().catch(() => {});
    process.stderr.write(`plant-store: The import of ${source} failed before reading it. ${failureMessage(err)}\nNothing was committed.\n`);
    return 3;
  }

  const counts: Counts = { imported: 0, identical: 0, conflicts: [], invalid: [] };
  const progress = new Progress(totalBytes);
  let bytesRead = 0;
  let linesRead = 0;
  let committedThrough = 0;
  let batch: PlantRecord[] = [];
  let batchLines: number[] = [];

  const commit = async (): Promise<void> => {
    if (batch.length > 0) {
      let outcomes;
      try {
        outcomes = await store.importPlants(batch);
      } catch (err) {
        throw new CommitError(`the commit of lines ${batchLines[0]} to ${batchLines[batchLines.length - 1]} failed (${reason(err)})`);
      }
      for (let i = 0; i < outcomes.length; i++) {
        const o = outcomes[i]!;
        if (o.kind === 'created') counts.imported++;
        else if (o.kind === 'replayed') counts.identical++;
        else counts.conflicts.push({ line: batchLines[i]!, id: batch[i]!.id });
      }
      batch = [];
      batchLines = [];
    }
    committedThrough = linesRead;
    progress.update(bytesRead, linesRead, counts);
  };
  /** Adds a parsed line; true when the batch is full and must be committed. */
  const take = (parsed: Parsed | undefined): boolean => {
    if (parsed === undefined) return false;
    if ('error' in parsed) {
      counts.invalid.push(parsed);
      return false;
    }
    batch.push(parsed.plant);
    batchLines.push(parsed.line);
    return batch.length >= batchSize;
  };
  const counted = async function* () {
    for await (const chunk of input) {
      bytesRead += chunk.length;
      yield chunk;
    }
  };

  /** JSON Lines by default (not --format jsonl): a CSV header on line 1 is a mistaken format, not an invalid line. */
  const jsonLine = (line: Line): Parsed | undefined => {
    const result = parseJsonLine(line);
    if (line.n === 1 && values.format === undefined && result !== undefined && 'error' in result && isCsvHeader(line)) {
      throw new FormatError(
        `Line 1 of ${source} is a CSV header, but ${file === '-' ? 'standard input' : 'this file'} is read as JSON Lines. ` +
          `Use --format csv: ${COMMAND} import --format csv ${file}`,
      );
    }
    return result;
  };

  // The first Ctrl-C stops the import cleanly (the read is cut short, the batch being committed finishes);
  // a second one, with the default handler back, ends the process at once.
  let interrupted = false;
  process.once('SIGINT', () => {
    interrupted = true;
    (input as NodeJS.ReadableStream & { destroy?: () => void }).destroy?.();
  });

  let failure: string | undefined;
  let wrongFormat: string | undefined;
  try {
    const csv = format === 'csv' ? new CsvParser() : undefined;
    for await (const lines of readLines(counted())) {
      for (const line of lines) {
        if (interrupted) throw new InterruptedError();
        linesRead = line.n;
        if (take(csv ? csv.push(line) : jsonLine(line))) await commit();
      }
      progress.update(bytesRead, linesRead, counts, false);
    }
    if (interrupted) throw new InterruptedError();
    if (csv) take(csv.end());
    await commit();
  } catch (err) {
    if (err instanceof FormatError) wrongFormat = err.message;
    failure = interrupted ? 'it was interrupted (Ctrl-C)'
      : err instanceof CsvHeaderError || err instanceof CommitError ? err.message
      : `reading ${source} failed after line ${linesRead} (${(err as Error).message})`;
  } finally {
    progress.done();
    await closeInput().catch(() => {});
    await store.close().catch(() => {});
  }
  if (wrongFormat !== undefined) {
    process.stderr.write(`plant-store: ${wrongFormat}\nNothing was committed.\n`);
    return 2;
  }

  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  if (failure !== undefined) {
    // Only what was committed counts: later invalid lines were never reached as far as the store is concerned.
    counts.invalid = counts.invalid.filter((p) => p.line <= committedThrough);
    process.stderr.write(`plant-store: The import of ${source} stopped: ${failure.replace(/\.$/, '')}.\n`);
    process.stdout.write(
      (committedThrough === 0
        ? `Import of ${source} stopped after ${seconds} s. Nothing was committed.\n`
        : `Import of ${source} stopped after ${seconds} s. Lines 1 to ${committedThrough} were committed; nothing after line ${committedThrough} was stored.\n`) +
        summary(counts) +
        'Running the same import again is safe: plants already stored count as identical.\n',
    );
    return 3;
  }
  process.stdout.write(`Import of ${source} finished: ${linesRead} lines in ${seconds} s, all committed.\n` + summary(counts));
  return counts.conflicts.length > 0 || counts.invalid.length > 0 ? 1 : 0;
}

/** The driver's own words behind a StoreUnavailableError (whose message is written for HTTP clients). */
function reason(err: unknown): string {
  const cause = (err as { cause?: unknown }).cause;
  return cause instanceof Error ? cause.message : (err as Error).message;
}

function formatOf(file: string): string {
  if (file === '-') return 'jsonl';
  const ext = extname(file).toLowerCase();
  if (ext === '.jsonl' || ext === '.ndjson') return 'jsonl';
  if (ext === '.csv') return 'csv';
  throw new UsageError(`The format of ${file} cannot be told from its extension: use --format jsonl or --format csv.`, 'import');
}

function summary(c: Counts): string {
  const listed = <T extends { line: number }>(items: T[], text: (item: T) => string): string =>
    items.slice(0, LIST_CAP).map((item) => `  line ${item.line}: ${text(item)}\n`).join('') +
    (items.length > LIST_CAP ? `  ... and ${items.length - LIST_CAP} more\n` : '');
  return (
    `imported: ${c.imported}\n` +
    `identical: ${c.identical}\n` +
    `conflicts: ${c.conflicts.length}\n` +
    listed(c.conflicts, (x) => `id ${x.id} is already stored with a different name or tag`) +
    `invalid: ${c.invalid.length}\n` +
    listed(c.invalid, (x) => x.error)
  );
}

/** A bar redrawn in place on a terminal; otherwise a plain line at most every few seconds. */
class Progress {
  private readonly tty = process.stderr.isTTY === true;
  private readonly started = Date.now();
  private last = this.started;
  private drawn = false;

  constructor(private readonly totalBytes: number | undefined) {}

  update(bytes: number, lines: number, c: Counts, committed = true): void {
    const now = Date.now();
    if (now - this.last < (this.tty ? 100 : 2000)) return;
    if (!this.tty && !committed) return;
    this.last = now;
    const rate = Math.round(lines / Math.max(0.001, (now - this.started) / 1000));
    const stats = `${lines} lines, ${c.imported} imported, ${c.identical} identical, ${c.conflicts.length} conflicts, ${c.invalid.length} invalid, ${rate} lines/s`;
    if (this.tty) {
      const width = 30;
      const share = this.totalBytes ? Math.min(1, bytes / this.totalBytes) : undefined;
      const bar = share === undefined ? '' : `[${'#'.repeat(Math.round(share * width)).padEnd(width, '.')}] ${(share * 100).toFixed(0).padStart(3)}% `;
      process.stderr.write(`\r\x1b[K${bar}${stats}`);
      this.drawn = true;
    } else {
      const share = this.totalBytes ? ` (${Math.min(100, (bytes / this.totalBytes) * 100).toFixed(0)}% of the input read)` : '';
      process.stderr.write(`import: ${stats}${share}\n`);
    }
  }

  done(): void {
    if (this.drawn) process.stderr.write('\r\x1b[K');
  }
}
