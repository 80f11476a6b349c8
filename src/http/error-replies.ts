// Every failure leaves as the contract's Error body with the right status, whichever layer raised it:
// our code, schema validation, Fastify, the router, or Node's HTTP parser.
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger, FastifyError, FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import { AppError, ERRORS, errorBody, tooLongText, type ErrorCode } from '../errors/catalogue.js';
import { securityHeadersFor } from './security-headers.js';
import { CommitOutcomeUnknownError, StoreUnavailableError } from '../errors/store-errors.js';

declare module 'fastify' {
  interface FastifyReply {
    /** The catalogue code of an error answer, for the access log; undefined on success. */
    errorCode?: ErrorCode;
  }
}

/** Fastify's own error codes, mapped into the catalogue. */
const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'BODY_TOO_LARGE',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'BAD_REQUEST',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'BODY_EMPTY',
  FST_ERR_CTP_INVALID_JSON_BODY: 'BODY_MALFORMED',
  FST_ERR_BAD_URL: 'BAD_URL',
};

interface AjvError {
  instancePath: string;
  keyword: string;
  message?: string;
  params: Record<string, unknown>;
}

const NO_CONTROL_CHARACTERS = '^[^\\x00-\\x1F\\x7F]*$';

/** A message naming the field and the rule it broke, e.g. `body/id must be an integer ...`. */
export function validationMessage(context: string, errors: AjvError[]): string {
  const e = errors[0];
  if (!e) return ERRORS.BODY_INVALID.message;
  const where = `${context}${e.instancePath}`;
  if (e.keyword === 'format' && (e.params.format === 'int64' || e.params.format === 'int32')) {
    const bits = e.params.format === 'int64' ? 63n : 31n;
    return `${where} must be an integer from ${-(2n ** bits)} to ${2n ** bits - 1n}.`;
  }
  if (e.keyword === 'type' && e.instancePath === '' && context === 'body') return 'The request body must be a JSON object.';
  // In a URL an integer is text: 01, +5, 5.0 and 1e3 are integers in value, refused for how they are written.
  if (e.keyword === 'type' && e.params.type === 'integer' && (context === 'params' || context === 'querystring')) {
    return `${where} must be an integer written as a canonical decimal (no leading zero or plus sign, no -0, fraction or exponent), such as 42.`;
  }
  if (e.keyword === 'type') {
    const type = String(e.params.type);
    return `${where} must be ${/^[aeiou]/.test(type) ? 'an' : 'a'} ${type}.`;
  }
  if (e.keyword === 'additionalProperties' && context === 'querystring') {
    const known = (e.params.known ?? []) as string[];
    const takes = known.length === 0 ? 'this operation takes no query parameters' : `this operation takes ${known.join(', ')}`;
    return `Unknown query parameter '${String(e.params.additionalProperty)}': ${takes}.`;
  }
  if (e.keyword === 'maxLength') return `${where} ${tooLongText(Number(e.params.limit))}.`;
  if (e.keyword === 'additionalProperties') {
    const known = e.params.known as string[] | undefined;
    const member = `Unknown member '${String(e.params.additionalProperty)}' in ${e.instancePath === '' && context === 'body' ? 'the body' : where}`;
    return known ? `${member}: this operation takes ${known.join(', ')}.` : `${member}.`;
  }
  // The choices are few (an enum of the document): naming them says how to fix the request.
  if (e.keyword === 'enum') return `${where} must be equal to one of the allowed values: ${(e.params.allowedValues as unknown[]).map(String).join(', ')}.`;
  if (e.keyword === 'required') return `${where} must have the required property '${String(e.params.missingProperty)}'.`;
  // The document's one rule against control characters (a token's name, printed in terminals) says so in words.
  if (e.keyword === 'pattern' && e.params.pattern === NO_CONTROL_CHARACTERS) return `${where} must not contain control characters (U+0000 to U+001F, U+007F).`;
  return `${where} ${e.message ?? 'is not valid'}.`;
}

/** The message of a 404 for a path no route serves. */
export function routeNotFoundMessage(request: FastifyRequest): string {
  return `No such resource: ${request.method} ${request.url.split('?')[0]!.slice(0, 200)}.`;
}

function bodyLimitMessage(request: FastifyRequest): string {
  return `The request body is larger than the limit of ${request.routeOptions.bodyLimit} bytes.`;
}

/**
 * Answers with the catalogue's Error body for `code`; `message` when the answer says more than the catalogue.
 * `status` is the catalogue's, except for CLIENT_ERROR (the framework's own 4xx).
 */
export function sendError(
  reply: FastifyReply,
  code: ErrorCode,
  message: string = ERRORS[code].message,
  headers: Record<string, string> = {},
  status: number = ERRORS[code].status,
): void {
  // Answering before an announced body has arrived (auth, 405, 413): the client may still be sending it, and
  // may never finish, so the connection closes after this answer. A request without a body is complete once
  // its head is read (a 404 of a GET keeps its connection).
  if (!reply.request.raw.complete && bodyAnnounced(reply.request.raw)) reply.header('connection', 'close');
  reply.errorCode = code;
  reply.code(status).headers(headers).type('application/json; charset=utf-8').send(errorBody(status, message));
}

/** Whether the request's head announces a body (RFC 9112 section 6.3): chunked, or a non-zero Content-Length. */
function bodyAnnounced(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/**
 * The access line of an answer that skips Fastify's hooks: written on the bare connection (no request id,
 * and often no method or path) or by frameworkErrors. app.ts's onResponse hook writes every other one.
 */
function logUnhookedAnswer(log: FastifyBaseLogger, code: ErrorCode, fields: { reqId?: string; method?: string; path?: string } = {}): void {
  log.info({ ...fields, statusCode: ERRORS[code].status, code }, 'request completed');
}

function pathOf(url: string | undefined): string {
  return (url ?? '').split('?')[0]!.slice(0, 512);
}

/** A whole HTTP/1.1 Error answer that closes the connection, for writing on a bare socket. */
function rawErrorResponse(code: ErrorCode, message: string = ERRORS[code].message, headers: Record<string, string> = {}): string {
  const { status } = ERRORS[code];
  const body = JSON.stringify(errorBody(status, message));
  // What every answer carries that does not need a parsed request: no RateLimit, as no token is known here.
  const all = { ...securityHeadersFor('/'), 'cache-control': 'no-store', ...headers };
  const extra = Object.entries(all).map(([name, value]) => `${name}: ${value}\r\n`).join('');
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n${extra}` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
  );
}

const EXPECTATION_FAILED = Symbol('expectation failed');

export function registerErrorReplies(app: FastifyInstance): void {
  // Node's HTTP server answers two kinds of request itself, with an empty body: an HTTP/1.1 request without
  // Host (400) and an Expect other than 100-continue (417). Both are answered in the Error shape instead.
  (app.server as { requireHostHeader?: boolean }).requireHostHeader = false;
  // Callback form: an async hook costs every request a promise.
  app.addHook('onRequest', (request, _reply, done) => {
    if (request.raw.httpVersion === '1.1' && request.headers.host === undefined) {
      done(new AppError('BAD_REQUEST', 'An HTTP/1.1 request must carry a Host header.', { headers: { connection: 'close' } }));
      return;
    }
    // A path no route serves is answered before a body would be read, whatever the method: Fastify would parse
    // it first, and refuses a QUERY without Content-Type with a bare 400 there.
    if (request.is404) {
      done(new AppError('ROUTE_NOT_FOUND', routeNotFoundMessage(request)));
      return;
    }
    done();
  });
  app.decorateReply('errorCode', undefined);
  // An unsupported Expect goes through Fastify like any request, so its 417 carries what every answer carries
  // (security headers, request id, Cache-Control and RateLimit once the token is known): routing, 404, 405 and
  // authentication come first, and the 417 is given before the body would be read.
  app.server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    (req as IncomingMessage & { [EXPECTATION_FAILED]?: boolean })[EXPECTATION_FAILED] = true;
    app.routing(req, res);
  });
  app.addHook('preParsing', (request, _reply, payload, done) => {
    if ((request.raw as IncomingMessage & { [EXPECTATION_FAILED]?: boolean })[EXPECTATION_FAILED]) {
      done(new AppError('EXPECTATION_FAILED', undefined, { headers: { connection: 'close' } }));
      return;
    }
    done(null, payload);
  });

  // Node hands CONNECT to 'connect' listeners and, with none, drops the connection without a word. This is not
  // a proxy: no method is allowed on an authority-form target, hence 405 with an empty Allow (RFC 9110 10.2.1).
  app.server.on('connect', (req: IncomingMessage, socket: Socket) => {
    socket.on('error', () => {});
    socket.end(rawErrorResponse('METHOD_NOT_ALLOWED', 'CONNECT is not supported: this service is not a proxy.', { allow: '' }));
    logUnhookedAnswer(app.log, 'METHOD_NOT_ALLOWED', { method: req.method, path: pathOf(req.url) });
  });

  app.setErrorHandler((thrown: FastifyError | AppError | StoreUnavailableError, request, reply) => {
    const error = thrown instanceof StoreUnavailableError ? storeFailure(thrown) : thrown;
    if (error instanceof AppError) {
      // A refusal while shutting down is expected: app.ts says it once per process, at info.
      // A store's failure names the operation and the driver's SQLSTATE, if any: a conflict reported as 503 is a bug.
      const store = thrown instanceof StoreUnavailableError ? { operation: `${request.method} ${request.routeOptions.url ?? pathOf(request.url)}`, sqlState: sqlStateOf(thrown.cause) } : {};
      if (error.status >= 500 && error.code !== 'SHUTTING_DOWN') request.log.error({ err: error.cause ?? error, ...store }, error.message);
      return sendError(reply, error.code, error.message, error.headers);
    }
    if (error.validation) {
      return sendError(reply, 'VALIDATION_FAILED', validationMessage(error.validationContext ?? 'body', error.validation as AjvError[]));
    }
    const code = FASTIFY_CODES[error.code];
    if (code) return sendError(reply, code, code === 'BODY_TOO_LARGE' ? bodyLimitMessage(request) : undefined);
    const status = error.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      return sendError(reply, 'CLIENT_ERROR', `${STATUS_CODES[status] ?? 'Client error'}.`, {}, status);
    }
    request.log.error({ err: error }, 'unhandled error');
    return sendError(reply, 'INTERNAL');
  });

  app.setNotFoundHandler((request, reply) => {
    sendError(reply, 'ROUTE_NOT_FOUND', routeNotFoundMessage(request));
  });

}

/** A PostgreSQL error's SQLSTATE (five characters), or undefined. */
function sqlStateOf(cause: unknown): string | undefined {
  const code = (cause as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/** A store's failure as the catalogue names it; the log keeps the driver's error. */
function storeFailure(err: StoreUnavailableError): AppError {
  return new AppError(err instanceof CommitOutcomeUnknownError ? 'STORE_COMMIT_UNKNOWN' : 'STORE_UNAVAILABLE', undefined, { cause: err.cause ?? err });
}

/**
 * Fastify options that route framework-level failures (bad URLs, broken HTTP) through the same shape;
 * `log` takes the access line of the answers that skip Fastify's hooks.
 */
export function errorServerOptions(log: FastifyBaseLogger): Pick<FastifyServerOptions, 'frameworkErrors' | 'clientErrorHandler'> {
  return {
    frameworkErrors(error, request, reply) {
      // These requests skip the onRequest hooks, which otherwise give the security headers and echo the request id.
      reply.headers(securityHeadersFor(request.url)).header('x-request-id', request.id);
      const code = FASTIFY_CODES[error.code] ?? 'BAD_REQUEST';
      sendError(reply, code);
      logUnhookedAnswer(log, code, { reqId: request.id, method: request.method, path: pathOf(request.url) });
    },
    clientErrorHandler(error: Error & { code?: string }, socket: Socket) {
      if (!socket.writable) return socket.destroy(error);
      const code: ErrorCode =
        error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 'REQUEST_TIMEOUT'
        : error.code === 'HPE_HEADER_OVERFLOW' ? 'HEADERS_TOO_LARGE'
        : 'BAD_HTTP';
      socket.end(rawErrorResponse(code));
      logUnhookedAnswer(log, code);
    },
  };
}
