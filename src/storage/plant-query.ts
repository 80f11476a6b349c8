// A list's description (plants/plant.ts PlantQuery) as the parts of a statement every engine shares: its
// conditions, its order, what it answers and the values bound to its placeholders, in order. Each engine's
// builder only renders these (sqlite/sqlite-plant-queries.ts, postgres/pg-plant-queries.ts: placeholders,
// text escaping, the page's JSON) and keeps one statement per shape. A new filter or order is a case here, and
// one in each builder where the engines write it differently; a value that needs escaping (a LIKE pattern) is
// escaped here, once.
import type { PlantQuery } from '../plants/plant.js';

export type PlantColumn = 'id' | 'name' | 'tag';

/** One key of an order. */
export interface OrderKey {
  column: PlantColumn;
  descending: boolean;
}

/** The keys of each order, the id last (PlantOrder). */
const ORDERS = {
  id: [{ column: 'id', descending: false }],
} as const satisfies Record<NonNullable<PlantQuery['order']>, readonly OrderKey[]>;

/** A condition of the WHERE clause; its values are the plan's, in the conditions' order. */
export type Condition =
  /** The column equals one value. */
  | { kind: 'equals'; column: PlantColumn }
  /** The keyset: rows after the cursor in the order, one value per key of the order. */
  | { kind: 'after' };

const TAG_EQUALS: Condition = { kind: 'equals', column: 'tag' };
const AFTER: Condition = { kind: 'after' };

/**
 * What the statement answers: the plants as rows (export), or the page: the JSON array of its items and how
 * many it holds, read one plant past the limit (plants/plant-page.ts pageOf).
 */
export type PlanOutput = 'records' | 'page';

export interface ListPlan {
  /** Names the statement: plans of one shape have the same SQL, so an engine renders and prepares it once. */
  shape: string;
  output: PlanOutput;
  conditions: readonly Condition[];
  order: readonly OrderKey[];
  /** The values of the conditions' placeholders in order, then the number of rows to read. */
  values: (bigint | string | number)[];
}

export function planOf(query: PlantQuery, output: PlanOutput): ListPlan {
  const orderName = query.order ?? 'id';
  const conditions: Condition[] = [];
  const values: ListPlan['values'] = [];
  let shape = output;
  if (query.tag !== undefined) {
    conditions.push(TAG_EQUALS);
    values.push(query.tag);
    shape += ':tag';
  }
  if (query.after !== undefined) {
    conditions.push(AFTER);
    values.push(query.after);
    shape += ':after';
  }
  values.push(output === 'page' ? query.limit + 1 : query.limit);
  return { shape: `${shape}:${orderName}`, output, conditions, order: ORDERS[orderName], values };
}

/**
 * The WHERE clause (with its leading space) and ORDER BY of a plan in the SQL both engines share, with the
 * engine's placeholders: `placeholder(i)` for the i-th value (from 0).
 */
export function whereAndOrder(plan: ListPlan, placeholder: (i: number) => string): { where: string; orderBy: string } {
  let next = 0;
  const terms = plan.conditions.map((c) => {
    switch (c.kind) {
      case 'equals':
        return `${c.column} = ${placeholder(next++)}`;
      case 'after': {
        // Rows after the cursor: greater in an ascending order, less in a descending one (row values for several keys).
        const op = plan.order[0]!.descending ? '<' : '>';
        const columns = plan.order.map((k) => k.column);
        const places = plan.order.map(() => placeholder(next++));
        return columns.length === 1 ? `${columns[0]} ${op} ${places[0]}` : `(${columns.join(', ')}) ${op} (${places.join(', ')})`;
      }
    }
  });
  return {
    where: terms.length === 0 ? '' : ` WHERE ${terms.join(' AND ')}`,
    orderBy: plan.order.map((k) => (k.descending ? `${k.column} DESC` : k.column)).join(', '),
  };
}
