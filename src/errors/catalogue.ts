// One catalogue of failures: a stable code, its HTTP status and its message. The Error body is made here only.

/** The `Error` schema of the contract. `error` is the HTTP status (see the OpenAPI document). */
export interface ErrorBody {
  error: number;
  message: string;
}

export const ERRORS = {
  BAD_REQUEST: { status: 400, message: 'The request is not valid.' },
  BODY_REQUIRED: { status: 400, message: 'A JSON request body is required.' },
  BODY_NOT_ALLOWED: { status: 400, message: 'This operation takes no request body; send none.' },
  BODY_EMPTY: { status: 400, message: 'The request body is empty; send a JSON object.' },
  BODY_MALFORMED: { status: 400, message: 'The request body is not valid JSON.' },
  BODY_NOT_UTF8: { status: 400, message: 'The request body is not valid UTF-8.' },
  /** Bounds the parse work a body can cause (src/http/json-parser.ts MAX_EXACT_NUMBERS). */
  BODY_TOO_MANY_NUMBERS: { status: 400, message: 'The request body holds too many long or exponent number literals.' },
  BODY_INVALID: { status: 400, message: 'The request body does not match the schema.' },
  /** The document's schema refused a body, path parameter or query; the reply names the field and the rule. */
  VALIDATION_FAILED: { status: 400, message: 'The request does not match the schema.' },
  BAD_URL: { status: 400, message: 'The request URL is malformed.' },
  BAD_HTTP: { status: 400, message: 'The request is not valid HTTP.' },
  UNAUTHENTICATED: { status: 401, message: 'Authentication required: send Authorization: Bearer <token>.' },
  INVALID_TOKEN: { status: 401, message: 'The access token is unknown, expired or revoked.' },
  INSUFFICIENT_SCOPE: { status: 403, message: 'The access token lacks the scope this operation needs.' },
  NOT_FOUND: { status: 404, message: 'No such resource.' },
  /** No route for this method and path; the reply names them. */
  ROUTE_NOT_FOUND: { status: 404, message: 'No such resource.' },
  PLANT_NOT_FOUND: { status: 404, message: 'No such plant.' },
  WEBHOOK_NOT_FOUND: { status: 404, message: 'No such webhook subscription.' },
  DELIVERY_NOT_FOUND: { status: 404, message: 'No such delivery.' },
  DELIVERY_NOT_RETRYABLE: { status: 409, message: 'Only a delivery of an active subscription that has not succeeded and is not being sent can be retried.' },
  WEBHOOK_NOT_DISABLED: { status: 409, message: 'The webhook subscription is not disabled.' },
  WEBHOOK_URL_REJECTED: { status: 400, message: 'The webhook URL is not allowed.' },
  EVENT_NOT_FOUND: { status: 400, message: 'The after parameter names no event of the feed.' },
  EVENTS_GONE: { status: 410, message: 'The after event was removed by retention; start again from the oldest event kept: GET /events without after.' },
  /** The after event may have been one that a restore from a backup discarded (storage/restores.ts). */
  EVENTS_RESTORED: { status: 410, message: 'The after event was lost when the store was restored from a backup; start again from the oldest event kept: GET /events without after.' },
  METHOD_NOT_ALLOWED: { status: 405, message: 'This method is not allowed on this resource.' },
  REQUEST_TIMEOUT: { status: 408, message: 'The request took too long to arrive.' },
  WEBHOOK_DUPLICATE: { status: 409, message: 'A subscription already delivers these events to this URL in this format.' },
  WEBHOOK_LIMIT: { status: 409, message: 'The webhook subscription limit (WEBHOOK_MAX_SUBSCRIPTIONS) is reached; delete one first.' },
  PLANT_CONFLICT: { status: 409, message: 'A plant with this id already exists with a different name or tag.' },
  PLANT_CHANGED: { status: 412, message: 'The plant does not have a version that If-Match names; nothing was changed. Read it again for its current ETag.' },
  BODY_TOO_LARGE: { status: 413, message: 'The request body is too large.' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, message: 'The request body must be sent as Content-Type: application/json.' },
  EXPECTATION_FAILED: { status: 417, message: 'The Expect header is not supported; only Expect: 100-continue is.' },
  IF_MATCH_REQUIRED: { status: 428, message: 'This service requires If-Match on updates and deletes: send the ETag of the plant as read.' },
  HEADERS_TOO_LARGE: { status: 431, message: 'The request headers are too large.' },
  TOO_MANY_AUTH_FAILURES: { status: 429, message: 'Too many failed authentication attempts; retry later.' },
  RATE_LIMITED: { status: 429, message: 'This token has made too many requests; retry after Retry-After seconds.' },
  /** GET /events with wait: the token already holds its share of waiting places (EVENTS_MAX_WAITING_PER_TOKEN). */
  EVENTS_TOKEN_WAITING: {
    status: 429,
    message: 'This token already has as many GET /events requests waiting as it may (EVENTS_MAX_WAITING_PER_TOKEN); retry after Retry-After seconds, or wait with fewer requests at once.',
  },
  /** Prefer: count=exact: the token already has its share of counts waiting (COUNTS_MAX_WAITING_PER_TOKEN). */
  COUNTS_TOKEN_WAITING: {
    status: 429,
    message: 'This token already has as many counted lists (Prefer: count=exact) waiting as it may (COUNTS_MAX_WAITING_PER_TOKEN); retry after Retry-After seconds, count with fewer requests at once, or list without Prefer: count=exact.',
  },
  /**
   * A 4xx that Fastify or a plugin raised with no code of its own here: the only code whose status is not
   * fixed, since it is the framework's (the reply keeps it, with its reason phrase as the message).
   */
  /** GET /events as a stream: the token already holds its share of streams (EVENTS_MAX_STREAMS_PER_TOKEN). */
  EVENTS_TOKEN_STREAMS: {
    status: 429,
    message: 'This token already has as many GET /events streams open as it may (EVENTS_MAX_STREAMS_PER_TOKEN); close one, or retry after Retry-After seconds.',
  },
  CLIENT_ERROR: { status: 400, message: 'Bad Request.' },
  INTERNAL: { status: 500, message: 'Internal server error.' },
  STORE_UNAVAILABLE: { status: 503, message: 'The store is unavailable; nothing was saved. Retry later.' },
  STORE_COMMIT_UNKNOWN: {
    status: 503,
    message: 'The store was lost while committing, so this write may or may not have been saved. Retrying the same request is safe: a replay is answered 200.',
  },
  OVERLOADED: { status: 503, message: 'The service is overloaded; nothing was done. Retry after Retry-After seconds.' },
  METRICS_UNAVAILABLE: { status: 503, message: 'The metrics of every worker process could not be gathered right now. Retry later.' },
  /** GET /events with wait: every waiting place of this process is taken (EVENTS_MAX_WAITING). */
  EVENTS_WAITING_FULL: {
    status: 503,
    message: 'This server process has as many GET /events requests waiting as it may (EVENTS_MAX_WAITING); retry after Retry-After seconds.',
  },
  /** Prefer: count=exact: every waiting place of this process's count lane is taken (COUNTS_MAX_WAITING). */
  COUNTS_WAITING_FULL: {
    status: 503,
    message: 'This instance has as many counted lists (Prefer: count=exact) waiting as it may (COUNTS_MAX_WAITING); retry after Retry-After seconds, or list without Prefer: count=exact.',
  },
  /** GET /events as a stream: every stream place of this process is taken (EVENTS_MAX_STREAMS). */
  EVENTS_STREAMS_FULL: {
    status: 503,
    message: 'This server process has as many GET /events streams open as it may (EVENTS_MAX_STREAMS); retry after Retry-After seconds.',
  },
  SHUTTING_DOWN: { status: 503, message: 'The service is shutting down; retry on another instance or later.' },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof ERRORS;

/** Retry-After (seconds) on 503 answers: long enough for a load balancer to route around, short for a blip. */
export const UNAVAILABLE_RETRY_AFTER_S = 1;

/** A failure a client caused or can act on. Thrown anywhere; turned into an Error body by the HTTP layer. */
export class AppError extends Error {
  readonly status: number;
  readonly headers: Record<string, string>;
  constructor(
    readonly code: ErrorCode,
    message?: string,
    options: { headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    super(message ?? ERRORS[code].message, { cause: options.cause });
    this.name = 'AppError';
    this.status = ERRORS[code].status;
    // Every 503 is transient (the store is unreachable, or this instance is stopping): tell clients when to retry.
    this.headers = this.status === 503 ? { 'retry-after': String(UNAVAILABLE_RETRY_AFTER_S), ...options.headers } : options.headers ?? {};
  }

  get body(): ErrorBody {
    return errorBody(this.status, this.message);
  }
}

export function errorBody(status: number, message: string): ErrorBody {
  return { error: status, message };
}

/** A length rule's wording, shared by the schema validator's message and the plant's own check. */
export function tooLongText(max: number): string {
  return `must be at most ${max} characters long (Unicode code points)`;
}
