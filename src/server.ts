// Process entry for `plant-store serve`: config, logger, store, listen, graceful shutdown. Nothing else.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { buildApp } from './app.js';
import { describeConfig, type Config } from './config.js';
import { createLogger } from './logger.js';
import { VERSION } from './health/version.js';
import { createTokenService } from './auth/token-service.js';
import { SCOPES } from './auth/tokens.js';
import { openStore, storeOptions } from './storage/open-store.js';

export async function serve(config: Config): Promise<number> {
  const logger = createLogger(config);
  const { store, migrations, secrets } = await openStore(config.databaseUrl, storeOptions(config));
  const applied = migrations.filter((m) => m.status === 'applied').map((m) => m.version);
  if (applied.length > 0) logger.info({ versions: applied }, 'migrations applied');
  if (secrets.resealed > 0) logger.info({ count: secrets.resealed }, 'webhook signing secrets encrypted under the first WEBHOOK_SECRET_KEYS key');
  if (!secrets.encrypted) logger.warn('WEBHOOK_SECRET_KEYS is not set: webhook signing secrets are stored in clear');

  const tokens = createTokenService(store, { cacheTtlMs: config.tokenCacheTtlMs });
  const app = await buildApp(config, { store, logger, tokens });

  const connections = trackResponses(app.server);
  // Listening comes first: a port already in use stops start-up before a first token is made and shown.
  try {
    await app.listen({ port: config.port, host: config.host });
  } catch (err) {
    await app.close().catch(() => {});
    await store.close();
    throw err;
  }
  const url = publicUrl(config.host, (app.server.address() as AddressInfo).port);
  logger.info({ node: process.version, version: VERSION, url, docs: `${url}/docs`, config: describeConfig(config) }, 'plant-store is listening');

  if (config.bootstrapToken && (await store.countTokens()) === 0) {
    const { token, secret } = await tokens.create({ name: 'bootstrap', scopes: [...SCOPES] });
    logger.info({ tokenId: token.id }, 'created the first API token');
    // Printed once, to the console only (never to the log stream's fields); not recoverable later.
    process.stdout.write(
      `\nNo API token existed, so one was created (id ${token.id}, scopes ${SCOPES.join(' ')}). It is shown only now:\n\n` +
        `  ${secret}\n\nUse it as: curl -H 'Authorization: Bearer ${secret}' ${url}/plants\n` +
        `Try the API at ${url}/docs (Authorize, then paste the token).\n` +
        `Manage tokens with: npx plant-store token create | list | revoke\n\n`,
    );
  }

  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = async (signal: string) => {
      stopping = true;
      logger.info({ signal }, 'shutting down: finishing in-flight requests');
      // In-flight requests finish, but their connections must not wait idle for the keep-alive timeout
      // (which held the exit back by up to KEEP_ALIVE_TIMEOUT_MS) nor be reused by the client.
      connections.closeAfterResponses();
      const force = setTimeout(() => {
        logger.error({ timeoutMs: config.shutdownTimeoutMs }, 'shutdown timed out; closing connections');
        app.server.closeAllConnections();
      }, config.shutdownTimeoutMs);
      force.unref();
      let code = 0;
      try {
        await app.close();
      } catch (err) {
        logger.error({ err }, 'error while closing the server');
        code = 1;
      }
      try {
        // Commits anything still queued before the database is released.
        await store.close();
      } catch (err) {
        logger.error({ err }, 'error while closing the store');
        code = 1;
      }
      clearTimeout(force);
      logger.info('stopped');
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
      resolve(code);
    };
    // Listeners stay installed until the end: a repeated signal must not fall back to the default action,
    // which kills the process mid-shutdown. That is common: Ctrl-C under `npm start` delivers SIGINT twice
    // (from the terminal and forwarded by npm). The shutdown timeout already bounds the wait.
    const onSignal = (signal: NodeJS.Signals) => {
      if (stopping) {
        logger.warn({ signal }, 'already shutting down; waiting for in-flight requests');
        return;
      }
      void stop(signal);
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
}

/** The address to print: a wildcard listen address is reached as localhost from the same machine. */
function publicUrl(host: string, port: number): string {
  const shown = host === '0.0.0.0' || host === '::' || host === '[::]' ? 'localhost' : host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return `http://${shown}:${port}`;
}

/** The responses in progress on a connection, oldest first, kept on the socket itself. */
const kInFlight = Symbol('plant-store responses in flight');
type TrackedSocket = Socket & { [kInFlight]?: ServerResponse[] };

/**
 * Keeps the responses in progress per connection, so that a shutdown can end each connection after its
 * in-flight requests: the last pending response of a connection says `Connection: close`, so the client
 * neither reuses the connection nor keeps it open, and Node closes it once the answer is written. (Requests
 * that arrive later on a connection get the app's 503, which closes it too.)
 *
 * The list lives on the socket, and the set holds only sockets. The Map from socket to a fresh list per
 * request this replaced made V8 promote about 4.5 KB for every request that waited past an event-loop turn
 * (every durable POST), and copying them was most of a POST's scavenge time (--trace-gc-nvp, issue 5); most
 * likely its superseded hash tables, dead in the old generation, still pointed at young responses.
 */
function trackResponses(server: Server) {
  const busy = new Set<TrackedSocket>();
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket as TrackedSocket;
    const list = (socket[kInFlight] ??= []);
    list.push(res);
    busy.add(socket);
    const done = () => {
      const i = list.indexOf(res);
      if (i === -1) return;
      list.splice(i, 1);
      if (list.length === 0) busy.delete(socket);
    };
    res.once('finish', done);
    res.once('close', done);
  });
  return {
    closeAfterResponses() {
      for (const socket of busy) {
        // Only the last one: requests pipelined behind it on the same connection still get their answers.
        const last = socket[kInFlight]?.at(-1);
        if (last && !last.headersSent) last.setHeader('connection', 'close');
      }
    },
  };
}
