// The contract is the router: every operation of the OpenAPI document becomes a route whose handler is
// found by operationId, whose validation and serialization come from the document's schemas, and whose
// security hook comes from its security requirements. A missing handler stops start-up.
import type { FastifyInstance, FastifyReply, FastifyRequest, preValidationHookHandler, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault, RouteHandlerMethod } from 'fastify';
import { METHODS } from 'node:http';
import { AppError } from '../errors/catalogue.js';
import type { Contract, OperationSpec } from './contract.js';
import type { ContractOperations } from './contract-types.js';
import { routeNotFoundMessage } from './error-replies.js';
import { TICKET_SCHEME, type ScopeRequirement } from '../auth/bearer-guard.js';

// Each handler declares its own operation's request (OperationRequest), so the table takes any route generic.
export type Handlers = Record<string, RouteHandlerMethod<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, any>>;

type JsonBody<Op> = Op extends { requestBody: { content: infer Content } } ? Content[keyof Content] : undefined;

/**
 * The request an operation's handler sees once validation has passed, typed by the document (contract-types.ts):
 * every `format: int64` value of body, path and query is a bigint.
 */
export type OperationRequest<Id extends keyof ContractOperations> = FastifyRequest<{
  Body: JsonBody<ContractOperations[Id]>;
  Params: NonNullable<ContractOperations[Id]['parameters']['path']>;
  Querystring: NonNullable<ContractOperations[Id]['parameters']['query']>;
}>;

/** The security hook of an operation, in Fastify's callback form. */
export type GuardHook = (req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => void;
export type GuardFactory = (requirements: ScopeRequirement[]) => GuardHook;

function emptySegmentIsNotFound(request: FastifyRequest, _reply: unknown, done: (err?: Error) => void): void {
  const params = request.params as Record<string, string>;
  for (const key in params) {
    if (params[key] === '') return done(new AppError('ROUTE_NOT_FOUND', routeNotFoundMessage(request)));
  }
  done();
}

/**
 * The hook of an operation that needs a token: answers to it (errors included) are for their caller alone, so no
 * cache keeps them (RFC 9111), then the guard. One hook rather than two: each costs every request a turn of
 * Fastify's hook runner.
 */
function noStoreThen(guard: GuardHook): GuardHook {
  return (request, reply, done) => {
    reply.header('cache-control', 'no-store');
    guard(request, reply, done);
  };
}

// Every method Node's HTTP parser takes (RFC 9110's, WebDAV's, QUERY, PURGE, ...): a known path answers each
// it does not support with 405 and Allow. CONNECT is answered on the socket (src/http/error-replies.ts).
const ALL_METHODS = METHODS.filter((m) => m !== 'CONNECT');

export function registerContractRoutes(app: FastifyInstance, contract: Contract, handlers: Handlers, guard: GuardFactory): void {
  const missing = contract.operations.filter((op) => typeof handlers[op.operationId] !== 'function').map((op) => op.operationId);
  if (missing.length > 0) throw new Error(`the OpenAPI document names operations with no handler: ${missing.join(', ')}`);
  const extra = Object.keys(handlers).filter((id) => !contract.operations.some((op) => op.operationId === id));
  if (extra.length > 0) throw new Error(`handlers for operations the OpenAPI document does not declare: ${extra.join(', ')}`);

  const methodsByUrl = new Map<string, Set<string>>();
  for (const op of contract.operations) {
    for (const s of op.security) {
      if (s.scheme !== 'bearerAuth' && s.scheme !== TICKET_SCHEME) throw new Error(`${op.operationId}: unsupported security scheme ${s.scheme}`);
    }
    app.route({
      method: op.method,
      url: op.url,
      handler: handlers[op.operationId]!,
      schema: {
        ...(op.body && { body: op.body.schema }),
        ...(op.params && { params: op.params }),
        ...(op.querystring && { querystring: op.querystring }),
        response: op.responses,
      },
      onRequest: [
        // `/plants/` is not a plant whose id is empty: a path with an empty segment names no resource.
        ...(op.params ? [emptySegmentIsNotFound] : []),
        ...(op.security.length > 0 ? [noStoreThen(guard(op.security.map((s) => ({ scopes: s.scopes, scheme: s.scheme }))))] : []),
        ...(op.body ? [] : [noBody]),
      ],
      ...(op.body && { preValidation: bodyCheck(op.body) }),
    });
    const methods = methodsByUrl.get(op.url) ?? new Set();
    methods.add(op.method);
    if (op.method === 'GET') methods.add('HEAD');
    methodsByUrl.set(op.url, methods);
  }

  // A known path with an unsupported method is 405 with Allow, not a 404. Fastify routes only the methods it
  // was told of; the 405 is thrown before a body would be read, whatever the method.
  for (const m of ALL_METHODS) if (!app.supportedMethods.includes(m)) app.addHttpMethod(m, { hasBody: true });
  for (const [url, methods] of methodsByUrl) {
    const allow = [...methods].sort().join(', ');
    const others = ALL_METHODS.filter((m) => !methods.has(m));
    if (others.length === 0) continue;
    app.route({
      method: others,
      url,
      exposeHeadRoute: false,
      config: { operation: 'method_not_allowed' },
      // Answered before any body is read.
      onRequest: async (request) => {
        throw new AppError('METHOD_NOT_ALLOWED', `${request.method} is not allowed on ${url}; allowed: ${allow}.`, { headers: { allow } });
      },
      handler: async () => undefined,
    });
  }
}

/**
 * An operation that declares no request body refuses one (a DELETE with a body, a retry with JSON) rather than
 * ignoring what the client meant to say; judged on the framing headers, before any body is read. A request
 * without content (no Transfer-Encoding, Content-Length 0 or absent: RFC 9112) is not judged by its
 * Content-Type: many clients send `Content-Type: application/json` on every request, and there is nothing to
 * parse. Fastify would run the parser on the empty content (400 "empty") or refuse the type (415), so the
 * request's headers, as Fastify reads them from here on, leave it out; the raw headers keep it.
 */
function noBody(request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void): void {
  const length = request.headers['content-length'];
  if ((length !== undefined && length !== '0') || request.headers['transfer-encoding'] !== undefined) {
    done(new AppError('BODY_NOT_ALLOWED'));
    return;
  }
  if (request.headers['content-type'] !== undefined) request.headers = { 'content-type': undefined };
  done();
}

/**
 * Before validation: a body of a JSON type other than the operation's is 415 (the parser takes every JSON type
 * the service knows), and a body that is required but absent is a clear 400 rather than a schema message
 * about undefined. Callback form: an async hook costs every create a promise.
 */
function bodyCheck(body: NonNullable<OperationSpec['body']>): preValidationHookHandler {
  const [mediaType] = body.mediaTypes;
  return (request, _reply, done) => {
    if (request.body === undefined) return done(body.required ? new AppError('BODY_REQUIRED') : undefined);
    const type = request.headers['content-type'] ?? '';
    const semi = type.indexOf(';');
    if ((semi < 0 ? type : type.slice(0, semi)).trim().toLowerCase() !== mediaType) {
      return done(new AppError('UNSUPPORTED_MEDIA_TYPE', `The request body must be sent as Content-Type: ${mediaType}.`));
    }
    done();
  };
}
