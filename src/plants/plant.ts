// The plant record, the store port every engine implements for plants, and the page the list answers.
import { CONTRACT_MAX_LENGTH } from '../http/contract-types.js';
import { tooLongText } from '../errors/catalogue.js';

/** A plant as stored. `id` is an exact int64. */
export interface PlantRecord {
  id: bigint;
  name: string;
  tag?: string;
}

/**
 * A plant with its version: a number from a store-wide counter that grows with every change of the plant (its
 * delete included) and is never issued again, for its id or any other, even after a restore (storage/restores.ts).
 */
export interface VersionedPlant extends PlantRecord {
  version: bigint;
}

/** The most characters a name or a tag may have: the document's `maxLength` (Unicode code points). */
export const PLANT_FIELD_MAX_LENGTH = { name: CONTRACT_MAX_LENGTH.Plant.name, tag: CONTRACT_MAX_LENGTH.Plant.tag } as const;

/**
 * The first field of `fields` longer than the rule allows ("name must be at most 256 characters ..."), or
 * undefined. Characters are code points, as the schema validator counts them, so every write path (API, the
 * result of a merge patch, import) agrees.
 */
export function fieldTooLong(fields: { name?: string; tag?: string | null }): { field: 'name' | 'tag'; rule: string } | undefined {
  for (const field of ['name', 'tag'] as const) {
    const value = fields[field];
    const max = PLANT_FIELD_MAX_LENGTH[field];
    if (typeof value === 'string' && codePointsOver(value, max)) return { field, rule: lengthRule(field) };
  }
  return undefined;
}

/** The length rule of a field as a message says it: "name must be at most 256 characters long ...". */
export function lengthRule(field: 'name' | 'tag'): string {
  return `${field} ${tooLongText(PLANT_FIELD_MAX_LENGTH[field])}`;
}

function codePointsOver(value: string, max: number): boolean {
  // A code point is one or two UTF-16 units, so only strings longer than `max` units can be over.
  if (value.length <= max) return false;
  let n = 0;
  for (const _ of value) if (++n > max) return true;
  return false;
}

/** What happened to a create: a new row, an identical replay, or a different plant under the same id. */
export type CreateOutcome =
  | { kind: 'created'; version: bigint }
  | { kind: 'replayed'; version: bigint }
  | { kind: 'conflict'; existing: VersionedPlant };

/**
 * The create rule for an id already taken (storage/plant-writes.ts plantBatch creates a free one): the same name and tag is a replay
 * (a client's retry, answered like the first time, with the current version); anything else is a conflict,
 * reported with what is stored. A replay compares with the plant as it is now, so replaying a create after an
 * update of that plant is a conflict.
 */
export function decideTakenCreate(requested: PlantRecord, stored: VersionedPlant): CreateOutcome {
  return stored.name === requested.name && stored.tag === requested.tag ? { kind: 'replayed', version: stored.version } : { kind: 'conflict', existing: stored };
}

/** What happened to an update or a delete. */
export type ChangeOutcome =
  | { kind: 'changed'; plant: VersionedPlant }
  | { kind: 'unchanged'; plant: VersionedPlant }
  | { kind: 'not-found' }
  | { kind: 'version-mismatch'; current: VersionedPlant };

/**
 * The rule for a delete that removed nothing (storage/plant-writes.ts plantBatch removes only under the version required): an
 * absent plant is not found, one without the version required is a mismatch. One found that had it was created
 * after the delete looked, by another writer of a shared database: left alone.
 */
export function decideRefusedDelete(found: VersionedPlant | undefined, ifVersion: bigint | undefined): ChangeOutcome {
  if (found === undefined) return { kind: 'not-found' };
  if (ifVersion !== undefined && found.version !== ifVersion) return { kind: 'version-mismatch', current: found };
  return { kind: 'unchanged', plant: found };
}

/** An RFC 7396 merge patch of a plant, as validated: a member absent is left alone, a null tag removes it. */
export interface PlantPatch {
  name?: string;
  tag?: string | null;
}

/** What a merge patch does to the plant as it is at its commit (decidePatch). */
export type PatchDecision =
  | { kind: 'write'; plant: PlantRecord }
  | { kind: 'unchanged'; plant: VersionedPlant }
  | { kind: 'not-found' }
  | { kind: 'version-mismatch'; current: VersionedPlant }
  | { kind: 'too-long'; current: VersionedPlant; field: 'name' | 'tag'; rule: string };

/**
 * The merge-patch rule (RFC 7396 on a plant), for every engine, decided inside its write transaction against the
 * row as committed: an absent plant is not found; one without a version `ifVersions` names (when given) is a
 * mismatch; a patch that leaves name and tag as they are writes nothing and keeps the version; a result with a
 * field over the length limit (one stored before the limit, left alone by the patch) is refused; anything else
 * is written. The patch itself was checked before it was sent.
 */
export function decidePatch(current: VersionedPlant | undefined, patch: PlantPatch, ifVersions: readonly bigint[] | undefined): PatchDecision {
  if (current === undefined) return { kind: 'not-found' };
  if (ifVersions !== undefined && !ifVersions.includes(current.version)) return { kind: 'version-mismatch', current };
  const name = patch.name ?? current.name;
  const tag = patch.tag === undefined ? current.tag : patch.tag ?? undefined;
  if (name === current.name && tag === current.tag) return { kind: 'unchanged', plant: current };
  const plant: PlantRecord = tag === undefined ? { id: current.id, name } : { id: current.id, name, tag };
  const tooLong = fieldTooLong(plant);
  if (tooLong !== undefined) return { kind: 'too-long', current, ...tooLong };
  return { kind: 'write', plant };
}

/**
 * A replace as the merge patch that has its meaning: set name and tag (no tag removes it), on the version it
 * requires. So a replace writes only when something changed, by decidePatch's rule, in every engine.
 */
export function replaceAsPatch(item: Extract<PlantWrite, { op: 'replace' }>): Extract<PlantWrite, { op: 'patch' }> {
  const { id, name, tag } = item.plant;
  return { op: 'patch', id, patch: { name, tag: tag ?? null }, ifVersions: item.ifVersion === undefined ? undefined : [item.ifVersion] };
}

/** What happened to a merge patch: a change outcome, or a result with a field too long (nothing written). */
export type PatchOutcome = ChangeOutcome | { kind: 'too-long'; field: 'name' | 'tag'; rule: string };

/**
 * One durable plant write as the group commit carries it. A replace writes only when the plant exists, has
 * `ifVersion` (when given) and differs from `plant`; a delete only when the plant exists and has `ifVersion`.
 * A patch is merged into the plant as the transaction finds it (decidePatch) and written when that decides so.
 * A write that happens is announced in its transaction: its event (plants/plant-event.ts plantEvent, with the
 * new version) is written whether or not a subscription receives its type; the sequencing pass places it in the
 * feed and makes its deliveries after the commit (events/passes.ts).
 */
export type PlantWrite = (
  | { op: 'create'; plant: PlantRecord }
  | { op: 'replace'; plant: PlantRecord; ifVersion: bigint | undefined }
  | { op: 'delete'; id: bigint; ifVersion: bigint | undefined }
  | { op: 'patch'; id: bigint; patch: PlantPatch; ifVersions: readonly bigint[] | undefined }
) & {
  /** With tracing on, the trace context of the request that wrote (tracing/spans.ts traceText): its event keeps it. */
  trace?: string;
};

/**
 * The orders a list can take (the document's `sort`): by id, or by name's Unicode code points with ties broken
 * by id; `-` reverses. Every order ends on the id, so that a keyset cursor is total.
 */
export const PLANT_ORDERS = ['id', '-id', 'name', '-name'] as const;
export type PlantOrder = (typeof PLANT_ORDERS)[number];

/**
 * What a list asks for: filters (every one given must hold), an order, a keyset cursor and a limit. Each engine
 * builds its statement from this description (storage/plant-query.ts), so a new filter or order is a member here.
 */
export interface PlantQuery {
  /** Only plants with this tag. */
  tag?: string;
  /** Only plants whose name contains this text, compared folded (plant-search.ts). */
  q?: string;
  /** The order of the list; 'id' (ascending) when not given. */
  order?: PlantOrder;
  /** Only plants after this one in the order: the last id of the previous page. */
  after?: bigint;
  /** With `after`, in a name order: the last name of the previous page. */
  afterName?: string;
  /** At most this many plants. */
  limit: number;
}

/**
 * A page of plants as the JSON array the API answers (the Plant schema: ids digit for digit, tag absent when
 * not set), written by the database itself in the shape plant-page.ts gives, so that no row object is made in JavaScript.
 */
export interface PlantPage {
  json: string;
  /** The id of the page's last plant, when it has one. */
  lastId?: bigint;
  /** Its name, in a name order: with lastId, the next page's cursor. */
  lastName?: string;
  /** Whether plants follow it (with the same tag, when one was asked). */
  more: boolean;
}

/** The plant half of a store. Every engine implements all of it. */
export interface PlantStore {
  /**
   * Durably creates a plant: resolves only after the row is committed and synced. Concurrent calls may
   * share one commit. Rejects with StoreUnavailableError when the commit fails; then nothing was stored.
   * A new plant's newPlant event is written with it, in its transaction (PlantWrite).
   */
  createPlant(plant: PlantRecord): Promise<CreateOutcome>;
  /**
   * Durably creates many plants in one transaction (one fsync), each by createPlant's rules and with its
   * event, in order. Rejects with StoreUnavailableError when the commit fails; then nothing of the batch was stored.
   */
  importPlants(plants: readonly PlantRecord[]): Promise<CreateOutcome[]>;
  /** The plant by id: at once where the engine reads synchronously (SQLite), which spares a GET its promises. */
  getPlant(id: bigint): VersionedPlant | undefined | Promise<VersionedPlant | undefined>;
  /** The plants the query asks for, as records (export). */
  listPlants(query: PlantQuery): Promise<PlantRecord[]>;
  /** The same page already serialized, and whether more follow, from one statement (the list endpoint). */
  listPlantsJson(query: PlantQuery): Promise<PlantPage>;
  /** How many plants match the query's filters (its cursor, order and limit aside): `Prefer: count=exact`. */
  countMatchingPlants(query: PlantQuery): Promise<bigint>;
  /**
   * Durably replaces a plant's name and tag (decidePatch's rules, as the patch that means it), committed and synced before it resolves,
   * in the same group commit as every other plant write. A change takes a new version and writes its plantUpdated event.
   */
  replacePlant(plant: PlantRecord, ifVersion?: bigint): Promise<ChangeOutcome>;
  /**
   * Durably deletes a plant (decideRefusedDelete's rules; `changed` carries the deleted plant), in the group commit,
   * with its plantDeleted event. A delete takes a new version, like any change: its event carries it.
   */
  deletePlant(id: bigint, ifVersion?: bigint): Promise<ChangeOutcome>;
  /**
   * Durably applies a merge patch to the plant as it is at the commit (decidePatch's rules, inside the write
   * transaction: no read before it, no retry), in the group commit, with its plantUpdated event when it changed
   * the plant. `ifVersions`: the versions the writer allows (If-Match), if any.
   */
  patchPlant(id: bigint, patch: PlantPatch, ifVersions?: readonly bigint[]): Promise<PatchOutcome>;
  countPlants(): Promise<number>;
}
