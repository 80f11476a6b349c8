// buildApp(config, deps): assembles the HTTP service from the contract and its features. Never listens, and
// builds no background service (background.ts): server.ts, tests and benchmarks do both.
import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyReply, type FastifyRequest, type FastifyInstance, type FastifySchemaCompiler, type FastifySerializerCompiler } from 'fastify';
import type { Ajv2020 } from 'ajv/dist/2020.js';
import type { Logger } from 'pino';
import { bearerGuard, credentialCheck, type ScopeRequirement } from './auth/bearer-guard.js';
import { createTicketService } from './auth/stream-tickets.js';
import { createFailureThrottle } from './auth/failure-throttle.js';
import type { TokenService } from './auth/token-service.js';
import { tokenHandlers } from './tokens/token-handlers.js';
import { jwtVerifierFromConfig } from './auth/jwt-config.js';
import { systemClock, type Clock } from './kit/clock.js';
import type { Config } from './config.js';
import { docsHandlers, registerDocsPage } from './docs/docs-handlers.js';
import { registerConsole } from './console/console-page.js';
import { AppError } from './errors/catalogue.js';
import { healthHandlers } from './health/health-handlers.js';
import { statusHandlers } from './health/status-handlers.js';
import { readReplicationStatus } from './replication/replication-status.js';
import { databaseFile } from './storage/engines.js';
import { compileSerializer, compileValidator, createAjv, loadBuiltContract, loadContract, serializerKey, validatorKey, wrapValidator, type BuiltContract, type Contract, type JsonSchema, type Serializer } from './http/contract.js';
import { registerContractRoutes } from './http/contract-routes.js';
import { answerInOrder, type AnswersOwed } from './http/in-order.js';
import { errorServerOptions, registerErrorReplies } from './http/error-replies.js';
import { registerJsonParser } from './http/json-parser.js';
import { registerCors, securityHeadersFor } from './http/security-headers.js';
import { createFixedWindowLimiter } from './limits/fixed-window.js';
import { registerLoadShedding } from './limits/load-shedder.js';
import { withRateLimits } from './limits/rate-limited-guard.js';
import { createSharedFailureCounter, createSharedRequestCounter, type LimitsChannel } from './limits/shared-limits.js';
import { accessLog, createLogger, LazyChildLogger } from './observations/logger.js';
import { createMetrics, metricsHandlers, type Metrics } from './metrics/metrics.js';
import { plantHandlers } from './plants/plant-handlers.js';
import { createPlantService } from './plants/plant-service.js';
import { plantReadLane } from './plants/read-lane.js';
import { tracing } from './tracing/tracing-switch.js';
import { webhookHandlers } from './webhooks/webhook-handlers.js';
import { createWebhookService } from './webhooks/webhook-service.js';
import { eventHandlers } from './events/event-handlers.js';
import { createCountLane } from './plants/count-lane.js';
import { createWaitPlaces } from './events/waiting.js';
import type { FeedNotifier } from './events/feed-notifier.js';
import type { Observers } from './observations/observations.js';
import type { Store } from './storage/store.js';

/** What the HTTP handlers tell the background services (process/background.ts), and where the feed's waiting readers listen. */
export interface ServiceLinks {
  /** A write committed events: the sequencer places them soon (or the writer's, which wakes itself). */
  eventsCommitted(): void;
  /** Deliveries may be due now (a retry was asked, a subscription enabled): the dispatcher looks. */
  deliveriesDue(): void;
  /** Where GET /events waits for new events. */
  readonly feed: FeedNotifier;
}

export interface AppDeps {
  store: Store;
  logger?: Logger;
  contract?: Contract;
  /** The tokens the guard verifies; the background flushes their last-used times (process/background.ts). */
  tokens: TokenService;
  /** What the handlers tell the background services, and where waiting feed readers listen (process/background.ts). */
  services: ServiceLinks;
  /** The process's observer list: the handlers report to it, and this app's metrics subscribe to it. */
  observers: Observers;
  /** Time for token expiry and caches, JWT claims, the key set's age and the rate-limit windows. */
  clock?: Clock;
  /** What GET /metrics answers, when not this app's own metrics: a multi-process server's, added up (process/primary.ts). */
  scrapeMetrics?: () => Promise<string>;
  /** The processes that serve HTTP (GET /status); 1 when omitted. */
  workers?: number;
  /** A worker of a multi-process server: its limits count in the primary, over this channel, for all `workers`. */
  sharedLimits?: { channel: LimitsChannel; workers: number };
}

declare module 'fastify' {
  interface FastifyInstance {
    tokens: TokenService;
    /** This app's Prometheus metrics (GET /metrics). */
    metrics: Metrics;
    /** From now on every request is answered 503 with `Connection: close` (a shutdown has begun). */
    drain(): void;
    /**
     * A new server takes over (process/takeover.ts): every request from now on is served as usual but closes its
     * connection (`Connection: close`), and the event streams and waiting feed reads end, to resume there.
     */
    handOver(): void;
    /** What each connection still owes, answered in order (http/in-order.ts). */
    answersOwed: AnswersOwed;
  }
}

/** Where GET /status reads the replicas' status: beside the store's file (none for a database server's). */
function replicationStatusOf(databaseUrl: string) {
  const file = databaseFile(databaseUrl);
  return file === undefined ? undefined : () => readReplicationStatus(file);
}

/**
 * The document and its validators as `npm run build` compiled them; the document read and compiled now, and a
 * warning, when the build is missing or older than the document.
 */
async function servedContract(logger: Logger): Promise<{ contract: Contract } & Partial<Omit<BuiltContract, 'contract'>>> {
  const built = await loadBuiltContract();
  if (!('stale' in built)) return built;
  logger.warn({ reason: built.stale }, 'the OpenAPI document is read and compiled at start-up, which is slower: `npm run build` compiles it ahead');
  return { contract: loadContract() };
}

function pathOf(url: string): string {
  const q = url.indexOf('?');
  return (q === -1 ? url : url.slice(0, q)).slice(0, 512);
}

const REQUEST_ID = /^[\w.:@/+=-]{1,128}$/;
/** A caller's X-Request-Id when it is a sane token; otherwise a new one. */
function requestIdOf(headers: IncomingHttpHeaders): string {
  const given = headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
}
/** An event stream's `retry:`: a client reconnects this soon after a stream ends (a deploy, a cut-off). */
const STREAM_RETRY_MS = 2_000;

export async function buildApp(config: Config, deps: AppDeps): Promise<FastifyInstance> {
  const logger = deps.logger ?? createLogger(config);
  const { contract, validators, serializers } = deps.contract ? { contract: deps.contract } : await servedContract(logger);
  const clock = deps.clock ?? systemClock;
  const { tokens, services, observers } = deps;
  // Only for what the build did not compile (a contract given by a test, or a document changed since the build).
  let ajv: Ajv2020 | undefined;
  const validatorCompiler: FastifySchemaCompiler<JsonSchema> = ({ schema, method, url, httpPart }) => {
    const built = validators?.[validatorKey(method, url, httpPart!)];
    if (built) return wrapValidator(built, schema, httpPart);
    if (validators) logger.warn({ method, url, httpPart }, 'no validator compiled at build time for this request part: compiling it now');
    return compileValidator((ajv ??= createAjv()), schema, httpPart);
  };
  const serializerCompiler: FastifySerializerCompiler<JsonSchema> = ({ schema, method, url, httpStatus }) => {
    const built = serializers?.[serializerKey(method, url, httpStatus!)];
    if (built) return built;
    if (serializers) logger.warn({ method, url, httpStatus }, 'no serializer compiled at build time for this response: compiling it now');
    return compileSerializer({ schema, method, url, httpStatus: httpStatus! });
  };
  const waitPlaces = createWaitPlaces({ maxWaiting: config.eventsMaxWaiting, maxWaitingPerToken: config.eventsMaxWaitingPerToken });
  const streamPlaces = createWaitPlaces({
    maxWaiting: config.eventsMaxStreams,
    maxWaitingPerToken: config.eventsMaxStreamsPerToken,
    refusals: { token: 'EVENTS_TOKEN_STREAMS', full: 'EVENTS_STREAMS_FULL' },
  });
  const countLane = createCountLane({ maxWaiting: config.countsMaxWaiting, maxWaitingPerToken: config.countsMaxWaitingPerToken });
  const metrics = createMetrics({
    contract,
    store: deps.store,
    logger: logger.child({ component: 'metrics' }),
    eventsWaiting: () => waitPlaces.waiting,
    countsWaiting: () => countLane.waiting,
  });
  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    // One line per request, written by the onResponse hook below.
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: (parent, bindings, options) =>
      new LazyChildLogger(parent as unknown as Logger, bindings, options) as unknown as FastifyBaseLogger,
    bodyLimit: config.bodyLimit,
    requestTimeout: config.requestTimeoutMs,
    // Node checks request deadlines on this interval (default 30 s); check often enough to honour short ones.
    http: {
      headersTimeout: config.headersTimeoutMs,
      connectionsCheckingInterval: Math.min(1_000, config.headersTimeoutMs, config.requestTimeoutMs),
    },
    keepAliveTimeout: config.keepAliveTimeoutMs,
    // request.ip is the X-Forwarded-For client only when the peer is one of these proxies (per-address limits).
    trustProxy: config.trustProxy.length > 0 ? [...config.trustProxy] : false,
    // Our own shutdown answer (below) keeps the Error shape; Fastify's would not.
    return503OnClosing: false,
    requestIdHeader: false,
    genReqId: (req) => requestIdOf(req.headers),
    ...errorServerOptions(logger as FastifyBaseLogger),
    // Fastify loads its default compilers (and with them Ajv) unless given these.
    schemaController: { compilersFactory: { buildValidator: (() => validatorCompiler) as never, buildSerializer: (() => serializerCompiler) as never } },
  });
  // First, while the app's own request listener is the server's only one.
  app.decorate('answersOwed', answerInOrder(app.server));
  app.decorate('tokens', tokens);
  app.decorate('metrics', metrics);
  const stopCounting = observers.subscribe(metrics.observe);

  let closing = false;
  let handingOver = false;
  let refusalLogged = false;
  // Requests waiting on the events feed answer at once when a shutdown begins.
  app.decorate('drain', () => {
    closing = true;
    services.feed.release();
  });
  app.decorate('handOver', () => {
    handingOver = true;
    services.feed.release();
  });
  app.addHook('preClose', async () => {
    // Handing over, a request still arriving on an open connection is served (the store is open till after).
    if (!handingOver) closing = true;
    services.feed.release();
  });
  // Hooks on every request take Fastify's callback form: an async hook costs a promise per request.
  app.addHook('onRequest', (request, reply, done) => {
    reply.headers(securityHeadersFor(request.url)).header('x-request-id', request.id);
    if (closing) {
      // Expected while draining, so not an error: one line per process says so, each refusal has its access line.
      if (!refusalLogged) logger.info('shutting down: requests that arrive now are refused with 503');
      refusalLogged = true;
      reply.header('connection', 'close');
      done(new AppError('SHUTTING_DOWN'));
      return;
    }
    if (handingOver) reply.header('connection', 'close');
    done();
  });
  const accessLine = accessLog(logger);
  const responded = (request: FastifyRequest, reply: FastifyReply) => {
    // The root logger's line with the request id as a field: the same line as the request's child would write.
    // The path only: a query string may carry a client's secret (RFC 6750's access_token). The catalogue code
    // of an error answer; none on success.
    accessLine(request.id, request.method, pathOf(request.url), reply.statusCode, reply.errorCode, Math.round(reply.elapsedTime * 100) / 100);
    metrics.observeRequest(request, reply);
  };
  app.addHook('onResponse', (request, reply, done) => {
    responded(request, reply);
    done();
  });

  registerCors(app, contract, config.corsOrigins);
  // After CORS, so a browser can read the 503; before authentication, so shedding costs nothing.
  const sheds = registerLoadShedding(app, contract, config.shedEventLoopDelayMs);
  registerErrorReplies(app);
  registerJsonParser(app);

  const shared = deps.sharedLimits;
  const failures = shared
    ? createSharedFailureCounter(shared.channel, config.authFailuresPerMinute, clock)
    : createFixedWindowLimiter({ limit: config.authFailuresPerMinute, windowMs: 60_000, clock });
  const throttle = createFailureThrottle(failures);
  const jwtLog = logger.child({ component: 'jwt' });
  // Neither callback sees the token; jose's and our error messages do not quote it.
  const jwt = await jwtVerifierFromConfig(config, {
    onJwksError: (err) => jwtLog.warn({ error: err.message }, 'could not fetch the JWT key set'),
    onUnexpectedError: (err) => jwtLog.error({ error: (err as Error)?.name, message: (err as Error)?.message }, 'unexpected error verifying a JWT'),
  }, clock);
  if (jwt && config.jwtAudience.length === 0) jwtLog.warn('JWT_AUDIENCE is not set: JWTs the identity provider issued for any audience are accepted');
  const perToken = !config.rateLimit
    ? undefined
    : shared
      ? createSharedRequestCounter({ channel: shared.channel, limit: config.rateLimitPerToken, windowS: config.rateLimitWindowS, workers: shared.workers, clock })
      : createFixedWindowLimiter({ limit: config.rateLimitPerToken, windowMs: config.rateLimitWindowS * 1000, clock });
  const limits = { perToken, observe: observers.observe };
  const tickets = createTicketService(deps.store, { ttlMs: config.eventsTicketSeconds * 1000, cacheTtlMs: config.tokenCacheTtlMs, clock });
  const guard = (requirements: ScopeRequirement[]) => withRateLimits(bearerGuard(tokens, throttle, requirements, jwt, tickets), limits);
  const plants = createPlantService(deps.store, {
    eventsCommitted: services.eventsCommitted,
    observe: observers.observe,
    maxPendingWrites: config.shedPendingCreates,
    requireIfMatch: config.requireIfMatch,
    countLane,
  });
  registerContractRoutes(
    app,
    contract,
    {
      // A commit that wrote events wakes the sequencer; their deliveries are made and sent off the request path.
      ...plantHandlers(plants),
      ...webhookHandlers(
        createWebhookService(deps.store.webhooks, {
          allowedHosts: config.webhookAllowedHosts,
          maxSubscriptions: config.webhookMaxSubscriptions,
          clock,
          onDue: services.deliveriesDue,
        }),
      ),
      ...eventHandlers(deps.store.events, services.feed, {
        retentionMs: config.eventRetentionMs,
        places: waitPlaces,
        pageBytes: config.eventsPageBytes,
        streams: {
          places: streamPlaces,
          heartbeatSeconds: config.eventsHeartbeatSeconds,
          retryMs: STREAM_RETRY_MS,
          stallMs: config.eventsStreamStallSeconds * 1000,
          ended: responded,
          allowed: credentialCheck(tokens, jwt, tickets),
        },
        tickets,
      }),
      ...tokenHandlers(tokens, clock),
      ...healthHandlers(deps.store),
      ...statusHandlers({ store: deps.store, workers: deps.workers ?? 1, replicas: config.replicaUrls.map((r) => r.name), replication: replicationStatusOf(config.databaseUrl) }),
      ...docsHandlers(contract),
      ...metricsHandlers(deps.scrapeMetrics ?? (() => metrics.scrape())),
    },
    guard,
  );
  await registerDocsPage(app, contract);
  if (config.console) registerConsole(app);

  const read = contract.operations.find((op) => op.operationId === 'getPlant');
  // Never with CORS, which adds Vary to every answer; open() is asked per request (shutdown, shedding, tracing).
  if (read && config.corsOrigins.length === 0) {
    app.answersOwed.lane = plantReadLane({
      plants,
      tokens,
      requirements: read.security.map((s) => ({ scopes: s.scopes, scheme: s.scheme })),
      perToken,
      jwt: jwt !== undefined,
      serialize: serializerCompiler({ schema: read.responses['200']!, method: read.method, url: read.url, httpStatus: '200' }) as Serializer,
      opening: securityHeadersFor(read.url),
      requestId: requestIdOf,
      // Shut while handing over too: Fastify's hook then answers with Connection: close.
      open: () => !closing && !handingOver && !tracing.on && !sheds(read.method, read.url),
      answered: (id, path, status, ms) => {
        accessLine(id, read.method, path, status, undefined, Math.round(ms * 100) / 100);
        metrics.observeAnswer(read.operationId, status, ms / 1_000);
      },
    });
  }

  app.addHook('onClose', async () => stopCounting());
  return app;
}
