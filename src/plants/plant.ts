// The plant record, the store port every engine implements for plants, and the page the list answers.
import type { OutboxEvent } from '../webhooks/delivery.js';

/** A plant as stored. `id` is an exact int64. */
export interface PlantRecord {
  id: bigint;
  name: string;
  tag?: string;
}

/** What happened to a create: a new row, an identical replay, or a different plant under the same id. */
export type CreateOutcome =
  | { kind: 'created' }
  | { kind: 'replayed' }
  | { kind: 'conflict'; existing: PlantRecord };

/**
 * The create rule, for the API, import and every engine: a free id is created; an id already holding the
 * same name and tag is a replay (a client's retry, answered like the first time); anything else under the
 * id is a conflict, reported with what is stored. `stored` is the plant found under the id, if any.
 */
export function decideCreate(requested: PlantRecord, stored: PlantRecord | undefined): CreateOutcome {
  if (stored === undefined) return CREATED;
  return stored.name === requested.name && stored.tag === requested.tag ? REPLAYED : { kind: 'conflict', existing: stored };
}

const CREATED: CreateOutcome = Object.freeze({ kind: 'created' });
const REPLAYED: CreateOutcome = Object.freeze({ kind: 'replayed' });

/** A keyset page request: plants with id > after, in id order, at most limit of them. */
export interface PlantQuery {
  after?: bigint;
  limit: number;
  tag?: string;
}

/**
 * A page of plants as the JSON array the API answers (the Plant schema: ids digit for digit, tag absent when
 * not set), written by the database itself so that no row object is made in JavaScript.
 */
export interface PlantPage {
  json: string;
  /** The id of the page's last plant, when it has one. */
  lastId?: bigint;
  /** Whether plants follow it (with the same tag, when one was asked). */
  more: boolean;
}

/** The plant half of a store. Every engine implements all of it. */
export interface PlantStore {
  /**
   * Durably creates a plant: resolves only after the row is committed and synced. Concurrent calls may
   * share one commit. Rejects with StoreUnavailableError when the commit fails; then nothing was stored.
   * The event is written with the plant, in its transaction, when it is new and a subscription is active.
   */
  createPlant(plant: PlantRecord, event?: OutboxEvent): Promise<CreateOutcome>;
  /**
   * Durably creates many plants in one transaction (one fsync), each by createPlant's rules, in order; the
   * event of a new plant comes from `eventFor`, called only when a subscription is active. Rejects with
   * StoreUnavailableError when the commit fails; then nothing of the batch was stored.
   */
  importPlants(plants: readonly PlantRecord[], eventFor: (plant: PlantRecord) => OutboxEvent): Promise<CreateOutcome[]>;
  getPlant(id: bigint): Promise<PlantRecord | undefined>;
  /** Plants with id > after (and the tag, if given), in id order, as records (export). */
  listPlants(query: PlantQuery): Promise<PlantRecord[]>;
  /** The same page already serialized, and whether more follow, from one read snapshot (the list endpoint). */
  listPlantsJson(query: PlantQuery): Promise<PlantPage>;
  /** Deletes a plant durably; false when there was none. */
  deletePlant(id: bigint): Promise<boolean>;
  countPlants(): Promise<number>;
}
