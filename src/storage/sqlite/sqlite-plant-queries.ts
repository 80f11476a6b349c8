// The SQLite builder of list queries (storage/plant-query.ts): `?` placeholders, text bound as it is stored, the
// page's items as json_object. Each shape's statement is rendered and prepared once, on first use (after
// migrating); a request only looks it up and binds its values.
import type Database from 'better-sqlite3';
import { PLANT_PAGE_ITEM, pageOf, type PageMember } from '../../plants/plant-page.js';
import type { PlantPage, PlantQuery, PlantRecord } from '../../plants/plant.js';
import { fts5Phrase, planOf, whereAndOrder, type ClauseDialect, type ListPlan } from '../plant-query.js';
import { plantOf, type PlantRow } from '../rows.js';

/**
 * One page item as json_object (it writes integers digit for digit and escapes strings; faster here than
 * concatenating text): a member absent when NULL is a CASE between the objects with and without it.
 */
function itemSql(members: readonly PageMember[]): string {
  const i = members.findIndex((m) => m.absentWhenNull);
  if (i === -1) return `json_object(${members.map((m) => `'${m.member}', ${m.column}`).join(', ')})`;
  const m = members[i]!;
  const present = members.map((x, k) => (k === i ? { ...x, absentWhenNull: false } : x));
  return `CASE WHEN ${m.column} IS NULL THEN ${itemSql(members.filter((_, k) => k !== i))} ELSE ${itemSql(present)} END`;
}
const ITEM = itemSql(PLANT_PAGE_ITEM);

const DIALECT: ClauseDialect = {
  placeholder: () => '?',
  orderTerms: (column) => [column],
  cursorTerms: (_column, place) => [place],
  // The folded name's trigram index (schema version 11) answers the phrase; its rowid is the plant's id.
  contains: (place) => `id IN (SELECT rowid FROM plant_names WHERE plant_names MATCH ${place})`,
};

function render(plan: ListPlan): string {
  const { where, orderBy } = whereAndOrder(plan, DIALECT);
  if (plan.output === 'count') return `SELECT count(*) AS n FROM plants${where}`;
  // The unary + keeps the planner from reading the bound limit: a bare `?` there makes SQLite prepare the
  // statement again at every bind (measured 4-6 µs a call, a third of a list page's time in SQLite).
  const rows = `SELECT id, name, tag FROM plants${where} ORDER BY ${orderBy} LIMIT +?`;
  // The aggregate takes the rows in the order the ordered subquery yields them (an ORDER BY inside
  // json_group_array would sort them again in a temporary b-tree); the list tests pin it.
  return plan.output === 'records' ? rows : `SELECT json_group_array(${ITEM}) AS json, count(*) AS items FROM (${rows})`;
}

/** The statement of a query and its values, as a request runs it (for EXPLAIN in the plan tests). */
export function sqliteListStatement(query: PlantQuery, output: ListPlan['output']): { sql: string; values: ListPlan['values'] } {
  const plan = planOf(query, output, fts5Phrase);
  return { sql: render(plan), values: plan.values };
}

export class SqlitePlantQueries {
  private readonly statements = new Map<string, Database.Statement>();

  constructor(private readonly db: Database.Database) {}

  records(query: PlantQuery): PlantRecord[] {
    const plan = planOf(query, 'records', fts5Phrase);
    return (this.statement(plan).all(plan.values) as PlantRow[]).map((r) => plantOf(r));
  }

  /** The page and whether more follow, from one statement: one snapshot. */
  page(query: PlantQuery): PlantPage {
    const plan = planOf(query, 'page', fts5Phrase);
    const row = this.statement(plan).get(plan.values) as { json: string; items: bigint };
    return pageOf({ json: row.json, items: Number(row.items) }, query.limit, plan.order[0]!.column === 'name');
  }

  /** How many plants match the query's filters (its cursor and limit aside). */
  count(query: PlantQuery): bigint {
    const plan = planOf(query, 'count', fts5Phrase);
    return (this.statement(plan).get(plan.values) as { n: bigint }).n;
  }

  private statement(plan: ListPlan): Database.Statement {
    let statement = this.statements.get(plan.shape);
    if (statement === undefined) {
      statement = this.db.prepare(render(plan)).safeIntegers(true);
      this.statements.set(plan.shape, statement);
    }
    return statement;
  }
}
