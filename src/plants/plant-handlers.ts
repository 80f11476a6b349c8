// HTTP handlers of the plant operations, keyed by the operationIds of the OpenAPI document. Validation has
// already turned every int64 of body, path and query into a bigint (src/http/contract.ts).
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { components } from '../client/schema.js';
import { AppError } from '../errors.js';
import type { OperationRequest } from '../http/contract-routes.js';
import { etagOf, matches, tagCondition } from '../http/entity-tags.js';
import type { PlantRecord, VersionedPlant } from './plant.js';
import type { PlantService, Precondition } from './plant-service.js';

type Plant = components['schemas']['Plant'];
type NewPlant = components['schemas']['NewPlant'];

/** A stored plant as the API shows it; `id` stays a BigInt, which the serializer writes digit for digit. */
function toBody(plant: PlantRecord): NewPlant {
  return plant.tag === undefined ? { id: plant.id, name: plant.name } : { id: plant.id, name: plant.name, tag: plant.tag };
}

/** The plant with its ETag, as every answer that shows one plant carries it. */
function shown(reply: FastifyReply, plant: VersionedPlant): NewPlant {
  reply.header('etag', etagOf(plant.version));
  return toBody(plant);
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
      const page = await plants.list({ limit, ...(query.after !== undefined && { after: query.after }), ...(query.tag !== undefined && { tag: query.tag }) });
      if (page.more && page.lastId !== undefined) {
        const next = new URLSearchParams({ limit: String(limit), after: String(page.lastId) });
        if (query.tag !== undefined) next.set('tag', query.tag);
        reply.header('link', `</plants?${next}>; rel="next"`);
      }
      // Text the store wrote in the Plant schema's shape is sent as it is.
      return reply.type('application/json; charset=utf-8').send(page.json);
    },

    async getPlant(request: OperationRequest<'getPlant'>, reply: FastifyReply) {
      const unless = tagCondition('If-None-Match', request.headers['if-none-match'], true);
      const plant = await plants.get(request.params.id);
      if (unless !== undefined && matches(unless, plant.version)) {
        return reply.code(304).header('etag', etagOf(plant.version)).send();
      }
      return shown(reply, plant);
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
