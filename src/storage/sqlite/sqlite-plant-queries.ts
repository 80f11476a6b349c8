// The SQLite builder of list queries (storage/plant-query.ts): `?` placeholders, text bound as it is stored, the
// page's items as json_object. Each shape's statement is rendered and prepared once, on first use (after
// migrating); a request only looks it up and binds its values.
import type Database from 'better-sqlite3';
import { PLANT_PAGE_ITEM, pageOf, type PageMember } from '../../plants/plant-page.js';
import type { PlantPage, PlantQuery, PlantRecord } from '../../plants/plant.js';
import { planOf, whereAndOrder, type ListPlan } from '../plant-query.js';
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

function render(plan: ListPlan): string {
  const { where, orderBy } = whereAndOrder(plan, () => '?');
  // The unary + keeps the planner from reading the bound limit: a bare `?` there makes SQLite prepare the
  // statement again at every bind (measured 4-6 µs a call, a third of a list page's time in SQLite).
  const rows = `SELECT id, name, tag FROM plants${where} ORDER BY ${orderBy} LIMIT +?`;
  // The aggregate takes the rows in the order the ordered subquery yields them (an ORDER BY inside
  // json_group_array would sort them again in a temporary b-tree); the list tests pin it.
  return plan.output === 'records' ? rows : `SELECT json_group_array(${ITEM}) AS json, count(*) AS items FROM (${rows})`;
}

export class SqlitePlantQueries {
  private readonly statements = new Map<string, Database.Statement>();

  constructor(private readonly db: Database.Database) {}

  records(query: PlantQuery): PlantRecord[] {
    const plan = planOf(query, 'records');
    return (this.statement(plan).all(plan.values) as PlantRow[]).map((r) => plantOf(r));
  }

  /** The page and whether more follow, from one statement: one snapshot. */
  page(query: PlantQuery): PlantPage {
    const plan = planOf(query, 'page');
    const row = this.statement(plan).get(plan.values) as { json: string; items: bigint };
    return pageOf({ json: row.json, items: Number(row.items) }, query.limit);
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
