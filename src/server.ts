// Process entry for `plant-store serve`: config, logger, store, listen, graceful shutdown. Nothing else.
import { buildApp } from './app.js';
import { describeConfig, type Config } from './config.js';
import { createLogger } from './logger.js';
import { createTokenService } from './auth/token-service.js';
import { SCOPES } from './auth/tokens.js';
import { openStore } from './storage/open-store.js';

export async function serve(config: Config): Promise<number> {
  const logger = createLogger(config);
  const { store, migrations } = await openStore(config.databaseUrl);
  const applied = migrations.filter((m) => m.status === 'applied').map((m) => m.version);
  if (applied.length > 0) logger.info({ versions: applied }, 'migrations applied');

  const tokens = createTokenService(store, { cacheTtlMs: config.tokenCacheTtlMs });
  const app = await buildApp(config, { store, logger, tokens });

  if (config.bootstrapToken && (await store.countTokens()) === 0) {
    const { token, secret } = await tokens.create({ name: 'bootstrap', scopes: [...SCOPES] });
    logger.info({ tokenId: token.id }, 'created the first API token');
    // Printed once, to the console only (never to the log stream's fields); not recoverable later.
    process.stdout.write(
      `\nNo API token existed, so one was created (id ${token.id}, scopes ${SCOPES.join(' ')}). It is shown only now:\n\n` +
        `  ${secret}\n\nUse it as: curl -H 'Authorization: Bearer ${secret}' ...\n` +
        `Manage tokens with: plant-store token create | list | revoke\n\n`,
    );
  }

  await app.listen({ port: config.port, host: config.host });
  logger.info({ config: describeConfig(config) }, 'plant-store is listening');

  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = async (signal: string) => {
      if (stopping) return;
      stopping = true;
      logger.info({ signal }, 'shutting down: finishing in-flight requests');
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
      resolve(code);
    };
    process.once('SIGTERM', () => void stop('SIGTERM'));
    process.once('SIGINT', () => void stop('SIGINT'));
  });
}
