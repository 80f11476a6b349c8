// The fill of plants' folded names (plants/plant-search.ts): a data step of the schema history, written once
// over a small port each engine's migration adapter implements. It fills every folded name that is NULL: rows
// written before version 11 added the column, or set NULL by version 12, which changed the folding. A write
// meanwhile (this instance's or another's) sets its own, which the fill leaves alone; once done, it finds nothing.
import { foldName } from '../plants/plant-search.js';

/** What the fill reads and writes. */
export interface FoldedNamesPort {
  /** The last id of the next `limit` plants by id after `after` whose folded name is NULL; undefined when none is. */
  lastUnfilled(after: bigint, limit: number): Promise<bigint | undefined>;
  /**
   * Where the engine folds in SQL: fills, in one transaction, the NULL folded names of the plants with ids in
   * (`after`, `last`] that it can fold there: every ASCII name at least (its ASCII lower case, which SQL's
   * lower() writes when it maps A-Z only), every name where its SQL can call `fold`. Faster than reading the
   * names out and writing them back.
   */
  fillInDatabase?(after: bigint, last: bigint, fold: (name: string) => string): Promise<void>;
  /** The first `limit` plants by id whose folded name is NULL. */
  unfilled(limit: number): Promise<{ id: bigint; name: string }[]>;
  /** Writes these folded names, each only where it is still NULL. */
  setFolded(rows: readonly { id: bigint; folded: string }[]): Promise<void>;
}

/** Below every int64 id. */
const BEFORE_EVERY_ID = -(2n ** 63n);
/** Plants per statement in SQL: one statement per 50,000 plants, each its own transaction (on SQLite, fewer and larger FTS5 segments: measured in docs/api.md). */
const SQL_CHUNK = 50_000;
/** Plants per statement folded here: a third less time than 1,000 a statement (200,000 accented names, PostgreSQL). */
const READ_CHUNK = 10_000;

/** Fills every NULL folded name: those the engine folds in SQL first, chunk by chunk, then the rest here. */
export async function fillFoldedNames(port: FoldedNamesPort): Promise<void> {
  if (port.fillInDatabase) {
    for (let from = BEFORE_EVERY_ID; ; ) {
      const to = await port.lastUnfilled(from, SQL_CHUNK);
      if (to === undefined) break;
      await port.fillInDatabase(from, to, foldName);
      from = to;
    }
  }
  for (;;) {
    const rows = await port.unfilled(READ_CHUNK);
    if (rows.length === 0) return;
    await port.setFolded(rows.map((r) => ({ id: r.id, folded: foldName(r.name) })));
  }
}
