// The client itself: createPlantStoreClient over openapi-fetch, with every JSON answer parsed losslessly (int64
// as bigint) and every PATCH sent as a merge patch; the schema's types under the names the package exports, and
// the error its helpers throw.
import createClient, { type Client, type ClientOptions, type Middleware } from 'openapi-fetch';
import { int64Decoder } from '../json/int64-decoder.js';
import { parseJsonRoot, stringifyJson } from '../json/lossless-json.js';
import { responseInt64, type components, type paths } from '../contract/schema.js';

/**
 * Parses JSON text as JSON.parse does, except that the numbers at `int64At` paths ("" the value itself, "/id"
 * a property, "/*" every array item, as in contract/schema.ts's `responseInt64`) become bigints, digit for digit. An
 * int64 path holding anything but an int64 integer (which the document forbids) keeps JSON.parse's value.
 */
export function parseJson(text: string, int64At: readonly string[] = []): unknown {
  const root = parseJsonRoot(text, 'double');
  int64Decoder(int64At)?.(root, 'value');
  return root.value;
}

/** A plant as sent to POST /plants and read back from GET /plants and GET /plants/{id}. `id` is a bigint. */
export type NewPlant = components['schemas']['NewPlant'];
/** The answer of POST /plants: `name`, and `tag` when it was sent. */
export type Plant = components['schemas']['Plant'];
/** Every error response: `error` is the HTTP status, `message` is for humans. */
export type ErrorBody = components['schemas']['Error'];
export type NewWebhook = components['schemas']['NewWebhook'];
export type Webhook = components['schemas']['Webhook'];
export type WebhookWithSecret = components['schemas']['WebhookWithSecret'];
export type WebhookDelivery = components['schemas']['WebhookDelivery'];
export type WebhookRecovery = components['schemas']['WebhookRecovery'];
export type WebhookRecoveryResult = components['schemas']['WebhookRecoveryResult'];
export type FeedEvent = components['schemas']['FeedEvent'];

/** The typed client: `GET`, `POST`, `DELETE`, ... of openapi-fetch over the document's paths. */
export type PlantStoreClient = Client<paths>;

export interface PlantStoreClientOptions extends Omit<ClientOptions, 'bodySerializer'> {
  /** The service's base URL, e.g. `https://plants.example.com`. */
  baseUrl: string;
  /** A bearer token (`pst_...`), sent as `Authorization: Bearer <token>` on every request. */
  token?: string;
}

/**
 * Creates a typed client.
 *
 * **int64 ids are bigint, always.** Every value the document declares `format: int64` (plant ids, the
 * `after` query parameter, the `{id}` path parameter of /plants/{id}) is a `bigint` in the types and at
 * run time: response bodies are parsed losslessly (JSON.parse would turn 9007199254740993 into
 * 9007199254740992), and request bodies write a bigint as an exact JSON number. Other integers (`limit`,
 * `Error.error`, ...) are ordinary numbers.
 *
 * Results are openapi-fetch's `{ data, error, response }`: `data` for 2xx, else `error`, typed as the
 * document's `Error` body. Network failures reject.
 *
 * @example
 * const client = createPlantStoreClient({ baseUrl: 'http://localhost:8080', token });
 * const { data, error } = await client.POST('/plants', { body: { id: 9223372036854775807n, name: 'Monstera' } });
 */
export function createPlantStoreClient(options: PlantStoreClientOptions): PlantStoreClient {
  const { token, headers, ...rest } = options;
  const client = createClient<paths>({
    ...rest,
    headers: { ...(token !== undefined && { authorization: `Bearer ${token}` }), ...(headers as Record<string, string> | undefined) },
    bodySerializer: (body: unknown) => stringifyJson(body),
  });
  client.use(losslessJson, mergePatch);
  // openapi-fetch parses with JSON.parse; replace its data/error with the lossless parse of the same text.
  for (const method of ['GET', 'PUT', 'POST', 'DELETE', 'OPTIONS', 'HEAD', 'PATCH', 'TRACE'] as const) {
    const original = client[method] as (...args: unknown[]) => Promise<{ data?: unknown; error?: unknown; response: Response }>;
    (client as unknown as Record<string, unknown>)[method] = async (...args: unknown[]) => {
      const result = await original(...args);
      const exact = parsedBodies.get(result.response);
      if (exact === undefined) return result;
      return result.response.ok ? { ...result, data: exact.body } : { ...result, error: exact.body };
    };
  }
  return client;
}

const parsedBodies = new WeakMap<Response, { body: unknown }>();

/** Every PATCH of the document is a JSON Merge Patch (RFC 7396): sent as application/merge-patch+json. */
const mergePatch: Middleware = {
  onRequest({ request }) {
    if (request.method !== 'PATCH') return undefined;
    request.headers.set('content-type', 'application/merge-patch+json');
    return request;
  },
};

/**
 * The entity tag of an answer that shows one plant (`ETag`, e.g. `"42"`), to send back in `If-Match` (a
 * change only if nobody changed the plant since) or `If-None-Match`; undefined when there is none.
 */
export function etagOf(response: Response): string | undefined {
  return response.headers.get('etag') ?? undefined;
}

/** Reads each JSON response body once, exactly, and hands openapi-fetch a copy of the text. */
const losslessJson: Middleware = {
  async onResponse({ request, response, schemaPath }) {
    const type = response.headers.get('content-type') ?? '';
    if (!/^application\/(?:[\w.+-]*\+)?json\b/i.test(type) || response.status === 204 || request.method === 'HEAD') return undefined;
    const text = await response.text();
    const copy = new Response(text, { status: response.status, statusText: response.statusText, headers: response.headers });
    if (text !== '') {
      const int64At = responseInt64[`${request.method} ${schemaPath}`]?.[String(response.status)] ?? [];
      try {
        parsedBodies.set(copy, { body: parseJson(text, int64At) });
      } catch {
        // Not JSON after all: openapi-fetch reports it as it would without this middleware.
      }
    }
    return copy;
  },
};

/** Thrown by listAllPlants when a page answers with an error. */
export class PlantStoreError extends Error {
  constructor(
    readonly status: number,
    readonly body: ErrorBody | undefined,
  ) {
    super(body?.message ?? `HTTP ${status}`);
    this.name = 'PlantStoreError';
  }
}
