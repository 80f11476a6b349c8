// The PostgreSQL builder of list queries (storage/plant-query.ts): `$n` placeholders, every text value escaped
// as the engine stores it (text.ts) and ids sent as decimal text, the page's items as concatenated JSON text.
// Each shape is rendered once and is a named prepared statement: parsed once per connection.
import type pg from 'pg';
import { PLANT_PAGE_ITEM, pageOf } from '../../plants/plant-page.js';
import type { PlantPage, PlantQuery, PlantRecord } from '../../plants/plant.js';
import { likeContains, planOf, whereAndOrder, type ClauseDialect, type ListPlan } from '../plant-query.js';
import { plantOf, type PlantRow } from '../rows.js';
import { NAME_KEY_CHARS } from './migrations.js';
import { jsonFromDbText, pgText, toDbText } from './text.js';

type Query = <R extends pg.QueryResultRow>(config: pg.QueryConfig) => Promise<pg.QueryResult<R>>;

// Concatenated rather than json_build_object, whose output has spaces after the colons; to_json escapes a
// string. The first member is never absent (plant-page.ts), so it carries no comma.
const ITEM = `'{' || ${PLANT_PAGE_ITEM.map((m, i) => {
  const member = `'${i === 0 ? '' : ','}"${m.member}":' || ${m.kind === 'int64' ? m.column : `to_json(${m.column})::text`}`;
  return m.absentWhenNull ? `CASE WHEN ${m.column} IS NULL THEN '' ELSE ${member} END` : member;
}).join(' || ')} || '}'`;

const NAME_KEY = `left(name, ${NAME_KEY_CHARS}) COLLATE "C"`;

const DIALECT: ClauseDialect = {
  placeholder: (i) => `$${i + 1}`,
  // Names order by code points (the "C" collation: UTF-8 bytes). The indexes hold a name's first NAME_KEY_CHARS
  // characters (migrations.ts), so a name order is that key, then the whole name, then the id: the same order as
  // the name and the id (keys that differ order as their names; names with equal keys are ordered by the second
  // term), read from the index with only ties of the key sorted (every name since the limit is whole in its key).
  orderTerms: (column) => (column === 'name' ? [NAME_KEY, 'name COLLATE "C"'] : [column]),
  cursorTerms: (column, place) => (column === 'name' ? [`left(${place}, ${NAME_KEY_CHARS})`, place] : [place]),
  // The pattern is escaped with backslashes (likeContains), LIKE's default escape; plants_name_trgm answers it.
  contains: (place) => `name_folded LIKE ${place}`,
};

function render(plan: ListPlan): string {
  const { where, orderBy } = whereAndOrder(plan, DIALECT);
  if (plan.output === 'count') return `SELECT count(*) AS n FROM plants${where}`;
  const rows = `SELECT id, name, tag FROM plants${where} ORDER BY ${orderBy} LIMIT $${plan.values.length}`;
  return plan.output === 'records'
    ? rows
    : `SELECT '[' || coalesce(string_agg(${ITEM}, ',' ORDER BY ${orderBy}), '') || ']' AS json, count(*) AS items FROM (${rows}) p`;
}

function bound(value: bigint | string | number): string | number {
  return typeof value === 'string' ? toDbText(value) : typeof value === 'bigint' ? value.toString() : value;
}

/** The statement of a query and its values, as a request runs it (for EXPLAIN in the plan tests). */
export function pgListStatement(query: PlantQuery, output: ListPlan['output']): { sql: string; values: (string | number)[] } {
  const plan = planOf(query, output, likeContains);
  return { sql: render(plan), values: plan.values.map(bound) };
}

export class PgPlantQueries {
  private readonly texts = new Map<string, string>();

  constructor(private readonly query: Query) {}

  async records(query: PlantQuery): Promise<PlantRecord[]> {
    const { rows } = await this.query<PlantRow>(this.statement(planOf(query, 'records', likeContains)));
    return rows.map((r) => plantOf(r, pgText));
  }

  /** The page and whether more follow, from one statement: one snapshot. */
  async page(query: PlantQuery): Promise<PlantPage> {
    const plan = planOf(query, 'page', likeContains);
    const { rows } = await this.query<{ json: string; items: bigint }>(this.statement(plan));
    const row = rows[0]!;
    return pageOf({ json: jsonFromDbText(row.json), items: Number(row.items) }, query.limit, plan.order[0]!.column === 'name');
  }

  /** How many plants match the query's filters (its cursor and limit aside). */
  async count(query: PlantQuery): Promise<bigint> {
    const { rows } = await this.query<{ n: string | bigint }>(this.statement(planOf(query, 'count', likeContains)));
    return BigInt(rows[0]!.n);
  }

  private statement(plan: ListPlan): pg.QueryConfig {
    let text = this.texts.get(plan.shape);
    if (text === undefined) this.texts.set(plan.shape, (text = render(plan)));
    return { name: `plants:${plan.shape}`, text, values: plan.values.map(bound) };
  }
}
