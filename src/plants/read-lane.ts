// GET /plants/{id}, the most frequent request, answered without Fastify's request path: each of the dozen hooks,
// the route's validation and the reply's header handling cost a little, and together they were a third of a
// read's CPU time (bench/README.md, "The floor of GET by id"). The lane takes a request only where its answer is
// certain to be the one the app would give, and gives it from the same parts: the token service's cached
// verdict, the token's count, the plant service's read, the document's serializer, the same headers in the same
// order, the access line and the metrics series. Anything else (a missing plant, a refusal, a conditional or HEAD
// request, a query string, an id written another way, a token not yet cached) goes to the app untouched;
// test/plants/read-lane.test.ts sends each kind both ways and compares the answers byte for byte.
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { satisfies, soleOpaqueBearer, type ScopeRequirement } from '../auth/bearer-guard.js';
import type { TokenService } from '../auth/token-service.js';
import type { Serializer } from '../http/contract.js';
import { etagOf } from '../http/entity-tags.js';
import type { Lane } from '../http/in-order.js';
import { rateLimitHeaders } from '../limits/fixed-window.js';
import { noteCounted, type RequestCounter, type TokenCount } from '../limits/rate-limited-guard.js';
import { toBody } from './plant-handlers.js';
import type { PlantService } from './plant-service.js';
import type { VersionedPlant } from './plant.js';

/** A count given at once (not waited for), as the lane answers with. */
type Counted = Exclude<TokenCount, Promise<unknown>>;

export interface ReadLaneParts {
  plants: Pick<PlantService, 'get'>;
  tokens: Pick<TokenService, 'verifyCached'>;
  /** getPlant's security requirements, from the document. */
  requirements: readonly ScopeRequirement[];
  /** The per-token limit, when on. */
  perToken?: RequestCounter;
  /** Whether JWTs are verified (by the identity provider's keys, never here). */
  jwt: boolean;
  /** The document's serializer of getPlant's 200. */
  serialize: Serializer;
  /** The headers every API answer opens with (the security headers and the API's policy). */
  opening: Readonly<Record<string, string>>;
  /** The request id Fastify would give the request. */
  requestId(headers: IncomingHttpHeaders): string;
  /** Whether the app takes requests the usual way now: false while it shuts down or sheds load. */
  open(): boolean;
  /** Writes the access line and counts the answer in the metrics, as the app's onResponse hook does. */
  answered(requestId: string, path: string, status: number, ms: number): void;
}

/** The canonical int64 decimal the document takes; any other spelling is the app's 400. */
const PLANT_PATH = /^\/plants\/(0|-?[1-9]\d{0,18})$/;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

export function plantReadLane(parts: ReadLaneParts): Lane {
  const { plants, tokens, requirements, perToken, jwt, serialize, requestId, open, answered } = parts;
  const opening = Object.entries(parts.opening).flat();

  /** The answer, its headers in the order the app's hooks set them. */
  function send(req: IncomingMessage, res: ServerResponse, plant: VersionedPlant, count: Counted | undefined, start: number): void {
    const id = requestId(req.headers);
    const body = serialize(toBody(plant));
    const headers = [...opening, 'x-request-id', id, 'cache-control', 'no-store'];
    if (count !== undefined) {
      const limit = rateLimitHeaders('token', count);
      headers.push('ratelimit-policy', limit['ratelimit-policy']!, 'ratelimit', limit.ratelimit!);
    }
    headers.push('etag', etagOf(plant.version), 'content-type', 'application/json; charset=utf-8', 'content-length', String(Buffer.byteLength(body)));
    res.writeHead(200, headers);
    res.end(body);
    answered(id, req.url!, 200, performance.now() - start);
  }

  /** Leaves the request to the app, its count noted so that it is not counted again. */
  function handOver(req: IncomingMessage, count: TokenCount | undefined): false {
    if (count !== undefined) noteCounted(req, count);
    return false;
  }

  return function plantReadLane(req, res) {
    if (req.method !== 'GET') return false;
    // As Fastify's elapsedTime, from the request's arrival at the app.
    const start = performance.now();
    const path = PLANT_PATH.exec(req.url!);
    const h = req.headers;
    // What one of the app's hooks would answer or judge otherwise: HTTP/1.1 without Host, a body, Expect, a condition.
    if (path === null || req.httpVersion !== '1.1' || h.host === undefined || h['if-none-match'] !== undefined || h.expect !== undefined
      || h['transfer-encoding'] !== undefined || (h['content-length'] !== undefined && h['content-length'] !== '0') || !open()) return false;
    const id = BigInt(path[1]!);
    if (id < INT64_MIN || id > INT64_MAX) return false;
    const secret = soleOpaqueBearer(req.rawHeaders, h.authorization, jwt);
    const verdict = secret === undefined ? undefined : tokens.verifyCached(secret);
    if (verdict?.ok !== true || !satisfies(requirements, verdict.token.scopes)) return false;
    const count = perToken?.hit(verdict.token.id);
    if (count !== undefined && (count instanceof Promise || !count.allowed)) return handOver(req, count);
    let plant: VersionedPlant | Promise<VersionedPlant>;
    try {
      plant = plants.get(id);
    } catch {
      // Not found, or the store failed: the app reads again and answers as it always does.
      return handOver(req, count);
    }
    if (!(plant instanceof Promise)) {
      send(req, res, plant, count, start);
      return true;
    }
    return plant.then(
      (p) => {
        send(req, res, p, count, start);
        return true;
      },
      () => handOver(req, count),
    );
  };
}
