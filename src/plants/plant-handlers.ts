// HTTP handlers of the plant operations, keyed by the operationIds of the OpenAPI document.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { components, operations } from '../http/contract-types.js';
import { exactInteger } from '../json/lossless-json.js';
import type { PlantRecord } from './plant.js';
import type { PlantService } from './plant-service.js';

type NewPlant = components['schemas']['NewPlant'];
type Plant = components['schemas']['Plant'];
type ListQuery = NonNullable<operations['listPlants']['parameters']['query']>;

/** A stored plant as the API shows it; `id` stays a BigInt, which the serializer writes digit for digit. */
function toBody(plant: PlantRecord) {
  return plant.tag === undefined ? { id: plant.id, name: plant.name } : { id: plant.id, name: plant.name, tag: plant.tag };
}

export function plantHandlers(plants: PlantService) {
  return {
    async addPlant(request: FastifyRequest, reply: FastifyReply): Promise<Plant> {
      const body = request.body as NewPlant;
      // The schema has checked id is an int64; exactInteger recovers digits a double would have rounded.
      const id = exactInteger(body, 'id') as bigint;
      const plant = await plants.add(body.tag === undefined ? { id, name: body.name } : { id, name: body.name, tag: body.tag });
      reply.header('location', `/plants/${id}`);
      return plant.tag === undefined ? { name: plant.name } : { name: plant.name, tag: plant.tag };
    },

    async listPlants(request: FastifyRequest, reply: FastifyReply) {
      const query = request.query as ListQuery;
      const limit = query.limit as number; // defaulted by the schema
      const after = exactInteger(query, 'after');
      const page = await plants.list({ limit, ...(after !== undefined && { after }), ...(query.tag !== undefined && { tag: query.tag }) });
      if (page.more && page.lastId !== undefined) {
        const next = new URLSearchParams({ limit: String(limit), after: String(page.lastId) });
        if (query.tag !== undefined) next.set('tag', query.tag);
        reply.header('link', `</plants?${next}>; rel="next"`);
      }
      // Text the store wrote in the Plant schema's shape is sent as it is.
      return reply.type('application/json; charset=utf-8').send(page.json);
    },

    async getPlant(request: FastifyRequest) {
      return toBody(await plants.get(exactInteger(request.params as object, 'id') as bigint));
    },

    async deletePlant(request: FastifyRequest, reply: FastifyReply) {
      await plants.remove(exactInteger(request.params as object, 'id') as bigint);
      return reply.code(204).send();
    },
  };
}
