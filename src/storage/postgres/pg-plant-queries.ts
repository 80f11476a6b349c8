// The PostgreSQL builder of list queries (storage/plant-query.ts): `$n` placeholders, every text value escaped
// as the engine stores it (text.ts) and ids sent as decimal text, the page's items as concatenated JSON text.
// Each shape is rendered once and is a named prepared statement: parsed once per connection.
import type pg from 'pg';
import { PLANT_PAGE_ITEM, pageOf } from '../../plants/plant-page.js';
import type { PlantPage, PlantQuery, PlantRecord } from '../../plants/plant.js';
import { planOf, whereAndOrder, type ListPlan } from '../plant-query.js';
import { plantOf, type PlantRow } from '../rows.js';
import { jsonFromDbText, pgText, toDbText } from './text.js';

type Query = <R extends pg.QueryResultRow>(config: pg.QueryConfig) => Promise<pg.QueryResult<R>>;

// Concatenated rather than json_build_object, whose output has spaces after the colons; to_json escapes a
// string. The first member is never absent (plant-page.ts), so it carries no comma.
const ITEM = `'{' || ${PLANT_PAGE_ITEM.map((m, i) => {
  const member = `'${i === 0 ? '' : ','}"${m.member}":' || ${m.kind === 'int64' ? m.column : `to_json(${m.column})::text`}`;
  return m.absentWhenNull ? `CASE WHEN ${m.column} IS NULL THEN '' ELSE ${member} END` : member;
}).join(' || ')} || '}'`;

function render(plan: ListPlan): string {
  const { where, orderBy } = whereAndOrder(plan, (i) => `$${i + 1}`);
  const rows = `SELECT id, name, tag FROM plants${where} ORDER BY ${orderBy} LIMIT $${plan.values.length}`;
  return plan.output === 'records'
    ? rows
    : `SELECT '[' || coalesce(string_agg(${ITEM}, ',' ORDER BY ${orderBy}), '') || ']' AS json, count(*) AS items FROM (${rows}) p`;
}

function bound(value: bigint | string | number): string | number {
  return typeof value === 'string' ? toDbText(value) : typeof value === 'bigint' ? value.toString() : value;
}

export class PgPlantQueries {
  private readonly texts = new Map<string, string>();

  constructor(private readonly query: Query) {}

  async records(query: PlantQuery): Promise<PlantRecord[]> {
    const { rows } = await this.query<PlantRow>(this.statement(planOf(query, 'records')));
    return rows.map((r) => plantOf(r, pgText));
  }

  /** The page and whether more follow, from one statement: one snapshot. */
  async page(query: PlantQuery): Promise<PlantPage> {
    const { rows } = await this.query<{ json: string; items: bigint }>(this.statement(planOf(query, 'page')));
    const row = rows[0]!;
    return pageOf({ json: jsonFromDbText(row.json), items: Number(row.items) }, query.limit);
  }

  private statement(plan: ListPlan): pg.QueryConfig {
    let text = this.texts.get(plan.shape);
    if (text === undefined) this.texts.set(plan.shape, (text = render(plan)));
    return { name: `plants:${plan.shape}`, text, values: plan.values.map(bound) };
  }
}
