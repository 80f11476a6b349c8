// HTTP handlers of the plant operations, keyed by the operationIds of the OpenAPI document.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { components } from '../http/contract-types.js';
import { exactInteger } from '../http/json-body.js';
import type { PlantService } from './plant-service.js';

type NewPlant = components['schemas']['NewPlant'];
type Plant = components['schemas']['Plant'];

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
  };
}
