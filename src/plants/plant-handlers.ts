// HTTP handlers of the plant operations, keyed by the operationIds of the OpenAPI document. Validation has
// already turned every int64 of body, path and query into a bigint (src/http/contract.ts).
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors/catalogue.js';
import type { OperationRequest } from '../http/contract-routes.js';
import type { ContractSchema } from '../http/contract-types.js';
import { etagOf, matches, tagCondition, type TagCondition } from '../http/entity-tags.js';
import type { PlantOrder, PlantQuery, PlantRecord, VersionedPlant } from './plant.js';
import type { PlantService, Precondition } from './plant-service.js';

type Plant = ContractSchema<'Plant'>;
type NewPlant = ContractSchema<'NewPlant'>;

/** A stored plant as the API shows it; `id` stays a BigInt, which the serializer writes digit for digit. */
export function toBody(plant: PlantRecord): NewPlant {
  return plant.tag === undefined ? { id: plant.id, name: plant.name } : { id: plant.id, name: plant.name, tag: plant.tag };
}

/** The plant with its ETag, as every answer that shows one plant carries it. */
function shown(reply: FastifyReply, plant: VersionedPlant): NewPlant {
  reply.header('etag', etagOf(plant.version));
  return toBody(plant);
}

/** GET's answer: 304 (sent here, so nothing is returned) when If-None-Match names the plant's tag, else the plant. */
function unlessMatched(reply: FastifyReply, plant: VersionedPlant, unless: TagCondition | undefined): NewPlant | undefined {
  if (unless !== undefined && matches(unless, plant.version)) {
    reply.code(304).header('etag', etagOf(plant.version)).send();
    return undefined;
  }
  return shown(reply, plant);
}

function ifMatch(request: FastifyRequest): Precondition {
  return tagCondition('If-Match', request.headers['if-match'], false);
}

/** A body's `id` member, when sent, names the plant of the path. */
function samePlant(bodyId: bigint | undefined, pathId: bigint): void {
  if (bodyId !== undefined && bodyId !== pathId) {
    throw new AppError('BODY_INVALID', `body/id ${bodyId} is not the id in the path (${pathId}); a plant's id cannot be changed.`);
  }
}

/**
 * The keyset cursor of a list: `after` alone in an id order; `after` and `after_name` together in a name
 * order (the `Link` of a page carries both).
 */
function cursorOf(order: PlantOrder, after: bigint | undefined, afterName: string | undefined): Pick<PlantQuery, 'after' | 'afterName'> {
  const byName = order === 'name' || order === '-name';
  if (afterName !== undefined && !byName) {
    throw new AppError('VALIDATION_FAILED', `query/after_name is accepted only with sort=name or sort=-name (this list's sort is ${order}).`);
  }
  if (byName && (after === undefined) !== (afterName === undefined)) {
    throw new AppError('VALIDATION_FAILED', `query/after and query/after_name go together with sort=${order}: the cursor is the last plant's name and id, as the Link of the previous page carries them.`);
  }
  if (after === undefined) return {};
  return afterName === undefined ? { after } : { after, afterName };
}

/** Whether `Prefer` (RFC 7240: comma-separated preferences, names case-insensitive) asks for count=exact. */
function countRequested(prefer: string | string[] | undefined): boolean {
  if (prefer === undefined) return false;
  const values = Array.isArray(prefer) ? prefer : [prefer];
  return values.some((v) => v.split(',').some((p) => /^\s*count\s*=\s*"?exact"?\s*(?:;|$)/i.test(p)));
}

export function plantHandlers(plants: PlantService) {
  return {
    async addPlant(request: OperationRequest<'addPlant'>, reply: FastifyReply): Promise<Plant> {
      const { id, name, tag } = request.body;
      const plant = await plants.add(tag === undefined ? { id, name } : { id, name, tag });
      reply.header('location', `/plants/${id}`).header('etag', etagOf(plant.version));
      return plant.tag === undefined ? { name: plant.name } : { name: plant.name, tag: plant.tag };
    },

    async listPlants(request: OperationRequest<'listPlants'>, reply: FastifyReply) {
      const query = request.query;
      const limit = query.limit as number; // defaulted by the schema
      const order = query.sort ?? 'id';
      const listQuery: PlantQuery = {
        limit,
        order,
        ...(query.tag !== undefined && { tag: query.tag }),
        ...(query.q !== undefined && { q: query.q }),
        ...cursorOf(order, query.after, query.after_name),
      };
      const counted = countRequested(request.headers.prefer);
      // The count only when asked: the plain page stays one statement and one await. The count is asked
      // first, so a count refused its place in the lane (thrown at once) reads no page. Every request here has
      // passed the bearer guard, which names its token.
      const [total, page] = counted ? await Promise.all([plants.count(listQuery, request.tokenId ?? ''), plants.list(listQuery)]) : [undefined, await plants.list(listQuery)];
      if (total !== undefined) reply.header('x-total-count', total.toString()).header('preference-applied', 'count=exact');
      if (page.more && page.lastId !== undefined) {
        const next = new URLSearchParams({ limit: String(limit) });
        if (query.tag !== undefined) next.set('tag', query.tag);
        if (query.q !== undefined) next.set('q', query.q);
        if (order !== 'id') next.set('sort', order);
        next.set('after', String(page.lastId));
        if (page.lastName !== undefined) next.set('after_name', page.lastName);
        reply.header('link', `</plants?${next}>; rel="next"`);
      }
      // Text the store wrote in the Plant schema's shape is sent as it is.
      return reply.type('application/json; charset=utf-8').send(page.json);
    },

    // Not async: on SQLite the plant is read at once and the answer returned without a promise.
    getPlant(request: OperationRequest<'getPlant'>, reply: FastifyReply): NewPlant | undefined | Promise<NewPlant | undefined> {
      const unless = tagCondition('If-None-Match', request.headers['if-none-match'], true);
      const plant = plants.get(request.params.id);
      return plant instanceof Promise ? plant.then((p) => unlessMatched(reply, p, unless)) : unlessMatched(reply, plant, unless);
    },

    async updatePlant(request: OperationRequest<'updatePlant'>, reply: FastifyReply): Promise<NewPlant> {
      const id = request.params.id;
      const { id: bodyId, name, tag } = request.body;
      samePlant(bodyId, id);
      return shown(reply, await plants.replace(tag === undefined ? { id, name } : { id, name, tag }, ifMatch(request)));
    },

    async patchPlant(request: OperationRequest<'patchPlant'>, reply: FastifyReply): Promise<NewPlant> {
      const id = request.params.id;
      const { id: bodyId, name, tag } = request.body;
      samePlant(bodyId, id);
      return shown(reply, await plants.patch(id, { ...(name !== undefined && { name }), ...(tag !== undefined && { tag }) }, ifMatch(request)));
    },

    async deletePlant(request: OperationRequest<'deletePlant'>, reply: FastifyReply) {
      await plants.remove(request.params.id, ifMatch(request));
      return reply.code(204).send();
    },
  };
}
