// The PostgreSQL builder of list queries (storage/plant-query.ts): `$n` placeholders, every text value escaped
// as the engine stores it (text.ts) and ids sent as decimal text, the page's items as concatenated JSON text.
// Each shape is rendered once and is a named prepared statement: parsed once per connection.
import type pg from 'pg';
import { PLANT_PAGE_ITEM, pageOf } from '../../plants/plant-page.js';
import type { PlantPage, PlantQuery, PlantRecord } from '../../plants/plant.js';
import { byName, likeContains, planOf, whereAndOrder, type ClauseDialect, type ListPlan } from '../plant-query.js';
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

const FOLDED_KEY = `left(name_folded, ${NAME_KEY_CHARS}) COLLATE "C"`;

const DIALECT: ClauseDialect = {
  placeholder: (i) => `$${i + 1}`,
  // Texts order by code points (the "C" collation: UTF-8 bytes). The name-order indexes hold a folded name's
  // first NAME_KEY_CHARS characters (migrations.ts), so a name order is that key, then the whole folded name, then
  // the name and the id: the same order as the folded name, the name and the id (keys that differ order as their
  // texts; texts with equal keys are ordered by the next term). The index gives the order of the key; only the
  // plants that share it are sorted (one name in its cases and accents: a folded name is whole in its key unless
  // its fold made it longer than a name may be).
  orderTerms: (column) => (column === 'name_folded' ? [FOLDED_KEY, 'name_folded COLLATE "C"'] : column === 'name' ? ['name COLLATE "C"'] : [column]),
  cursorTerms: (column, place) => (column === 'name_folded' ? [`left(${place}, ${NAME_KEY_CHARS})`, place] : [place]),
  // The pattern is escaped with backslashes (likeContains), LIKE's default escape; plants_name_trgm answers it.
  contains: (place) => `name_folded LIKE ${place}`,
};

function render(plan: ListPlan): string {
  const { where, orderBy } = whereAndOrder(plan, DIALECT);
  if (plan.output === 'count') return `SELECT count(*) AS n FROM plants${where}`;
  // The page's aggregate orders the rows again by the order's terms: a name order's need the folded name too.
  const columns = plan.output === 'page' && byName(plan) ? 'id, name, tag, version, name_folded' : 'id, name, tag, version';
  const rows = `SELECT ${columns} FROM plants${where} ORDER BY ${orderBy} LIMIT $${plan.values.length}`;
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
    return pageOf({ json: jsonFromDbText(row.json), items: Number(row.items) }, query.limit, byName(plan));
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
