// The SQLite builder of list queries (storage/plant-query.ts): `?` placeholders, text bound as it is stored, the
// page's items as json_object. Each shape's statement is rendered and prepared once, on first use (after
// migrating); a request only looks it up and binds its values.
import type Database from 'better-sqlite3';
import { PLANT_PAGE_ITEM, pageOf, type PageMember } from '../../plants/plant-page.js';
import type { PlantPage, PlantQuery, PlantRecord } from '../../plants/plant.js';
import { byName, fts5Phrase, likeContains, planOf, whereAndOrder, type ClauseDialect, type ListPlan } from '../plant-query.js';
import { plantOf, type PlantRow } from '../rows.js';
import { foldName } from '../../plants/plant-search.js';

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

/**
 * A q in an id order: the trigram index drives, in rowid (id) order, and each match's plant is read by its id,
 * so the LIMIT stops the walk after a page of matches however many names match (FTS5 reads its doclists in
 * rowid order, either way, and takes the cursor as a rowid bound). CROSS JOIN keeps that loop order.
 */
const BY_NAMES_IN_ID_ORDER: ClauseDialect = {
  ...DIALECT,
  orderTerms: (column) => [column === 'id' ? 'plant_names.rowid' : column],
  contains: (place) => `plant_names MATCH ${place}`,
};

/**
 * A q in a name order that many names match: the order's index is walked and each folded name tested (LIKE,
 * backslash escapes: likeContains; the index holds the folded name, so the test reads no row), so a page costs about limit × plants / matches index entries; with few
 * matches the trigram index finds them all and they are sorted instead (DIALECT). Per name, the walk costs
 * about what sorting one match costs (measured: 0.15 against 0.19 µs), hence the choice at WALK_AT_MATCHES.
 * Testing each walked entry against the trigram index instead would run the MATCH again per entry (13 s for a
 * rare q on 200,000 plants).
 */
const WALKING_NAMES: ClauseDialect = {
  ...DIALECT,
  contains: (place) => `name_folded LIKE ${place} ESCAPE '\\'`,
};

/**
 * From how many matches of a q a name order walks its index rather than sorting the matches: a page then reads
 * at most about limit × plants / WALK_AT_MATCHES names (on 10,000,000 plants, a page of 100 about 100,000,
 * some 15 ms) and a sort at most this many matches (about 2 ms); counting up to it costs about 0.5 ms.
 */
export const WALK_AT_MATCHES = 10_000;

type Way = 'walk' | 'index';

function render(plan: ListPlan, way: Way = 'index'): string {
  const byNames = plan.output !== 'count' && plan.order[0]?.column === 'id' && plan.conditions.some((c) => c.kind === 'contains');
  const { where, orderBy } = whereAndOrder(plan, way === 'walk' ? WALKING_NAMES : byNames ? BY_NAMES_IN_ID_ORDER : DIALECT);
  if (plan.output === 'count') return `SELECT count(*) AS n FROM plants${where}`;
  const from = byNames ? 'plant_names CROSS JOIN plants ON plants.id = plant_names.rowid' : 'plants';
  // The unary + keeps the planner from reading the bound limit: a bare `?` there makes SQLite prepare the
  // statement again at every bind (measured 4-6 µs a call, a third of a list page's time in SQLite).
  const rows = `SELECT id, name, tag, version FROM ${from}${where} ORDER BY ${orderBy} LIMIT +?`;
  // The aggregate takes the rows in the order the ordered subquery yields them (an ORDER BY inside
  // json_group_array would sort them again in a temporary b-tree); the list tests pin it.
  return plan.output === 'records' ? rows : `SELECT json_group_array(${ITEM}) AS json, count(*) AS items FROM (${rows})`;
}

/** A q in a name order, which may walk the order's index (WALKING_NAMES). */
const mayWalk = (query: PlantQuery) => query.q !== undefined && (query.order === 'name' || query.order === '-name');

/** The plan of a query taken the given way: a walk tests names with LIKE, the index reads FTS5 phrases. */
const planWay = (query: PlantQuery, output: ListPlan['output'], way: Way) => planOf(query, output, way === 'walk' ? likeContains : fts5Phrase);

/** The statement of a query and its values, as a request runs it (for EXPLAIN in the plan tests), walking or not. */
export function sqliteListStatement(query: PlantQuery, output: ListPlan['output'], way: Way = 'index'): { sql: string; values: ListPlan['values'] } {
  const plan = planWay(query, output, way);
  return { sql: render(plan, way), values: plan.values };
}

export class SqlitePlantQueries {
  private readonly statements = new Map<string, Database.Statement>();
  private probe: Database.Statement | undefined;

  constructor(private readonly db: Database.Database) {}

  records(query: PlantQuery): PlantRecord[] {
    const way = this.wayOf(query);
    const plan = planWay(query, 'records', way);
    return (this.statement(plan, way).all(plan.values) as PlantRow[]).map((r) => plantOf(r));
  }

  /** The page and whether more follow, from one statement: one snapshot. */
  page(query: PlantQuery): PlantPage {
    const way = this.wayOf(query);
    const plan = planWay(query, 'page', way);
    const row = this.statement(plan, way).get(plan.values) as { json: string; items: bigint };
    return pageOf({ json: row.json, items: Number(row.items) }, query.limit, byName(plan));
  }

  /** How many plants match the query's filters (its cursor and limit aside). */
  count(query: PlantQuery): bigint {
    const plan = planWay(query, 'count', 'index');
    return (this.statement(plan, 'index').get(plan.values) as { n: bigint }).n;
  }

  /** Whether a query walks its order's index (WALKING_NAMES): a q in a name order that many names match. */
  private wayOf(query: PlantQuery): Way {
    if (!mayWalk(query)) return 'index';
    this.probe ??= this.db.prepare(`SELECT count(*) FROM (SELECT 1 FROM plant_names WHERE plant_names MATCH ? LIMIT ${WALK_AT_MATCHES})`).pluck();
    return (this.probe.get(fts5Phrase(foldName(query.q!))) as number) >= WALK_AT_MATCHES ? 'walk' : 'index';
  }

  private statement(plan: ListPlan, way: Way): Database.Statement {
    const key = `${plan.shape}:${way}`;
    let statement = this.statements.get(key);
    if (statement === undefined) {
      statement = this.db.prepare(render(plan, way)).safeIntegers(true);
      this.statements.set(key, statement);
    }
    return statement;
  }
}
