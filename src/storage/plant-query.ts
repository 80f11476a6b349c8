// A list's description (plants/plant.ts PlantQuery) as the parts of a statement every engine shares: its
// conditions, its order, what it answers and the values bound to its placeholders, in order. Each engine's
// builder only renders these (sqlite/sqlite-plant-queries.ts, postgres/pg-plant-queries.ts: placeholders,
// text escaping, the page's JSON) and keeps one statement per shape. A new filter or order is a case here, and
// one in each builder where the engines write it differently (ClauseDialect); a value that needs escaping (a
// LIKE pattern, an FTS5 phrase) is escaped here, once. A name order is the folded name (plants/plant-search.ts),
// then the name, then the id, texts by code points on both engines; a `q` compares the folded name through each
// engine's trigram index.
import { foldName } from '../plants/plant-search.js';
import type { PlantQuery } from '../plants/plant.js';

export type PlantColumn = 'id' | 'name' | 'name_folded' | 'tag';

/** One key of an order. */
export interface OrderKey {
  column: PlantColumn;
  descending: boolean;
}

/**
 * The keys of each order, the id last (PlantOrder). A name order reads as a person reads: by the folded name
 * (`ficus`, `Ficus` and `FICUS` together, `É` beside `E`), then by the name itself (so the order is total and
 * the same on every engine), then by the id. A cursor needs only the last plant's name and id: its folded name
 * is the fold of that name.
 */
const ORDERS = {
  id: [{ column: 'id', descending: false }],
  '-id': [{ column: 'id', descending: true }],
  name: [
    { column: 'name_folded', descending: false },
    { column: 'name', descending: false },
    { column: 'id', descending: false },
  ],
  '-name': [
    { column: 'name_folded', descending: true },
    { column: 'name', descending: true },
    { column: 'id', descending: true },
  ],
} as const satisfies Record<NonNullable<PlantQuery['order']>, readonly OrderKey[]>;

/** A condition of the WHERE clause; its values are the plan's, in the conditions' order. */
export type Condition =
  /** The column equals one value. */
  | { kind: 'equals'; column: PlantColumn }
  /** The keyset: rows after the cursor in the order, one value per key of the order. */
  | { kind: 'after' }
  /** The name contains the text (q), compared folded (plants/plant-search.ts): one value, the engine's pattern. */
  | { kind: 'contains' };

const TAG_EQUALS: Condition = { kind: 'equals', column: 'tag' };
const AFTER: Condition = { kind: 'after' };
const CONTAINS: Condition = { kind: 'contains' };

/** How an engine writes `contains`' value: the folded text as a pattern its index reads (likeContains, fts5Phrase). */
export type ContainsPattern = (folded: string) => string;

/** A LIKE pattern (escape character: backslash) of the rows whose folded name contains `folded`; `%`, `_`, backslash literal. */
export const likeContains: ContainsPattern = (folded) => `%${folded.replace(/[\\%_]/g, '\\$&')}%`;

/** An FTS5 phrase of `folded`: inside the double quotes every character is literal but `"`, which is doubled. */
export const fts5Phrase: ContainsPattern = (folded) => `"${folded.replaceAll('"', '""')}"`;

/**
 * What the statement answers: the plants as rows (export), the page: the JSON array of its items and how many
 * it holds, read one plant past the limit (plants/plant-page.ts pageOf), or the count of plants matching the
 * filters (no cursor, no order, no limit).
 */
export type PlanOutput = 'records' | 'page' | 'count';

export interface ListPlan {
  /** Names the statement: plans of one shape have the same SQL, so an engine renders and prepares it once. */
  shape: string;
  output: PlanOutput;
  conditions: readonly Condition[];
  order: readonly OrderKey[];
  /** The values of the conditions' placeholders in order, then the number of rows to read (not for a count). */
  values: (bigint | string | number)[];
}

/** Whether a plan's order is a name order (its page's cursor then carries the last name). */
export const byName = (plan: ListPlan): boolean => plan.order[0]?.column === 'name_folded';

/** The plan of `query`; `pattern` is how the engine writes a `q` (ContainsPattern). */
export function planOf(query: PlantQuery, output: PlanOutput, pattern: ContainsPattern): ListPlan {
  const orderName = query.order ?? 'id';
  const order = ORDERS[orderName];
  const conditions: Condition[] = [];
  const values: ListPlan['values'] = [];
  let shape: string = output;
  if (query.tag !== undefined) {
    conditions.push(TAG_EQUALS);
    values.push(query.tag);
    shape += ':tag';
  }
  if (query.q !== undefined) {
    conditions.push(CONTAINS);
    values.push(pattern(foldName(query.q)));
    shape += ':q';
  }
  if (output === 'count') return { shape, output, conditions, order: [], values };
  if (query.after !== undefined) {
    conditions.push(AFTER);
    for (const key of order) {
      const value = key.column === 'id' ? query.after : query.afterName;
      if (value === undefined) throw new Error(`a cursor of the ${orderName} order needs its ${key.column}`);
      values.push(key.column === 'name_folded' ? foldName(value as string) : value);
    }
    shape += ':after';
  }
  values.push(output === 'page' ? query.limit + 1 : query.limit);
  return { shape: `${shape}:${orderName}`, output, conditions, order, values };
}

/** How an engine writes the parts that differ: a column in an order or keyset, and the `contains` condition. */
export interface ClauseDialect {
  placeholder(i: number): string;
  /**
   * A column as the terms of an order or keyset that order by it (PostgreSQL: the folded name is ordered by its
   * indexed leading characters, then by the whole text, by code points).
   */
  orderTerms(column: PlantColumn): readonly string[];
  /** The terms a cursor's value at `place` compares with orderTerms(column), one for each. */
  cursorTerms(column: PlantColumn, place: string): readonly string[];
  /** The condition that the folded name matches the pattern at `place`. */
  contains(place: string): string;
}

/**
 * The WHERE clause (with its leading space) and ORDER BY of a plan in the SQL both engines share, with the
 * engine's placeholders (`placeholder(i)` for the i-th value, from 0) and terms (ClauseDialect). Every key of
 * an order goes the same direction, so the keyset is one row-value comparison.
 */
export function whereAndOrder(plan: ListPlan, dialect: ClauseDialect): { where: string; orderBy: string } {
  let next = 0;
  const terms = plan.conditions.map((c) => {
    switch (c.kind) {
      case 'equals':
        return `${c.column} = ${dialect.placeholder(next++)}`;
      case 'contains':
        return dialect.contains(dialect.placeholder(next++));
      case 'after': {
        // Rows after the cursor: greater in an ascending order, less in a descending one (row values for several keys).
        const op = plan.order[0]!.descending ? '<' : '>';
        const columns = plan.order.flatMap((k) => dialect.orderTerms(k.column));
        const places = plan.order.flatMap((k) => dialect.cursorTerms(k.column, dialect.placeholder(next++)));
        return columns.length === 1 ? `${columns[0]} ${op} ${places[0]}` : `(${columns.join(', ')}) ${op} (${places.join(', ')})`;
      }
    }
  });
  return {
    where: terms.length === 0 ? '' : ` WHERE ${terms.join(' AND ')}`,
    orderBy: plan.order.flatMap((k) => dialect.orderTerms(k.column).map((term) => `${term}${k.descending ? ' DESC' : ''}`)).join(', '),
  };
}
