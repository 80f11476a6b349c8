// The document's types and string limits as the server's code reads them. They come from the one type set
// `npm run generate:client` generates from openapi/plant-store.yaml (src/contract/schema.ts, which the client
// package compiles in too), so the server and the client are typed by the same document and no second
// generated copy can fall out of step with it (test/client/client-fresh.test.ts).
import { maxLength, type components, type operations } from '../contract/schema.js';

/** Every operation of the document, by operationId: its parameters, request body and responses. */
export type ContractOperations = operations;

/** A component schema of the document, by name: `ContractSchema<'Plant'>`. Every `format: int64` is a bigint. */
export type ContractSchema<Name extends keyof components['schemas']> = components['schemas'][Name];

/**
 * The `maxLength` of the document's string properties, by component schema, then property: the most Unicode
 * code points the service accepts (`CONTRACT_MAX_LENGTH.Plant.name`).
 */
export const CONTRACT_MAX_LENGTH = maxLength;
