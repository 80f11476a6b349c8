// HTTP handlers of the plant operations, keyed by the operationIds of the OpenAPI document. Validation has
// already turned every int64 of body, path and query into a bigint (src/http/contract.ts).
import type { FastifyReply } from 'fastify';
import type { components } from '../client/schema.js';
import type { OperationRequest } from '../http/contract-routes.js';
import type { PlantRecord } from './plant.js';
import type { PlantService } from './plant-service.js';

type Plant = components['schemas']['Plant'];
type NewPlant = components['schemas']['NewPlant'];

/** A stored plant as the API shows it; `id` stays a BigInt, which the serializer writes digit for digit. */
function toBody(plant: PlantRecord): NewPlant {
  return plant.tag === undefined ? { id: plant.id, name: plant.name } : { id: plant.id, name: plant.name, tag: plant.tag };
}

export function plantHandlers(plants: PlantService) {
  return {
    async addPlant(request: OperationRequest<'addPlant'>, reply: FastifyReply): Promise<Plant> {
      const { id, name, tag } = request.body;
      const plant = await plants.add(tag === undefined ? { id, name } : { id, name, tag });
      reply.header('location', `/plants/${id}`);
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

    async getPlant(request: OperationRequest<'getPlant'>): Promise<NewPlant> {
      return toBody(await plants.get(request.params.id));
    },

    async deletePlant(request: OperationRequest<'deletePlant'>, reply: FastifyReply) {
      await plants.remove(request.params.id);
      return reply.code(204).send();
    },
  };
}
