// Process entry: config → connections → services (start-up.ts) → server → graceful shutdown.
import { systemClock } from '#core/clock.js';
import { createLogger } from '#core/infra/logger.js';
import { createApp } from './app.js';
import { createApiServer } from './shared/http/server.js';
import { demoSandboxMoved, publishDemoCatalog } from './features/catalog/demo.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import type { Logger } from 'pino';
import { startSandboxProcess, type RunningSandbox } from './features/connections/index.js';
import { startUp } from './start-up.js';
import { warmObservationSchema, warmSchemas } from './features/clinical/ingest/fhir-schema.js';
import { RECORD_TYPES } from './features/clinical/record-types.js';
import { warmSearchDefinitions } from './features/clinical/search/definitions.js';

/** The sandbox EHR for a development API; a warning, not a failure, when it cannot start (a port in use). */
async function startSandbox(config: Config, logger: Logger): Promise<RunningSandbox | undefined> {
  const port = (config.port === 0 ? undefined : config.port) ?? 8080;
  const origins = [
    `http://127.0.0.1:${port}`,
    `http://localhost:${port}`,
    ...(config.publicBaseUrl ? [config.publicBaseUrl] : []),
  ];
  try {
    const sandbox = await startSandboxProcess(config.smart.sandboxPort, origins, logger);
    logger.info(
      { sandbox: sandbox.origin },
      `sandbox EHR at ${sandbox.origin}: its brands in the demo catalog are connectable (sign in as ada / sandbox)`,
    );
    return sandbox;
  } catch (error) {
    logger.warn({ err: error }, 'the sandbox EHR did not start; its brands are not connectable (PORTICO_SANDBOX_PORT)');
    return undefined;
  }
}

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel, 'portico-api');
  if (config.cursorSecretIsEphemeral)
    logger.warn(
      'PORTICO_CURSOR_SECRET is unset: list cursors are signed with a per-process secret and stop working after a restart',
    );

  const started = await startUp(config, { logger, say: (m) => logger.info(m) });
  const { connections, services } = started;
  const { redis, embedded } = connections;
  if (
    config.demoCatalog &&
    (!(await services.snapshots.active(config.catalog)) || (await demoSandboxMoved(services.snapshots, config)))
  ) {
    const report = await publishDemoCatalog(config, connections.mongodbUri, logger);
    logger.info(
      {
        catalog: config.catalog,
        brands: report.brandCount,
        logos: report.logos.rendered,
        snapshotId: report.snapshot.id,
      },
      'published the demo catalog',
    );
  }
  await services.activeCatalog.start(config.catalogPollMs, redis);
  await services.endpointHealth.start(config.catalogPollMs, redis);
  if (config.webhooks.dispatch) await services.dispatcher.start();
  services.connections.syncRunner.start();

  warmObservationSchema();
  warmSearchDefinitions();
  const { handler, writesDone } = createApp({ config, services, clock: systemClock, logger });
  const server = createApiServer(handler);
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(config.port, config.host, resolve));
  // The other record types' schemas, compiled while the API is idle at first rather than by the first sync.
  void warmSchemas(RECORD_TYPES, (type, error) =>
    logger.warn({ err: error, resourceType: type }, 'a record type’s R4 schema did not compile'),
  );
  const sandbox = config.smart.sandbox ? await startSandbox(config, logger) : undefined;
  logger.info(
    {
      port: config.port,
      mongodb: embedded ? 'embedded' : 'external',
      redis: Boolean(redis),
      admin: config.adminToken !== undefined,
      dispatcher: config.webhooks.dispatch,
    },
    `Portico API listening on http://${config.host}:${config.port}`,
  );

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down: no new connections, finishing in-flight requests');
    const shutdownBy = Date.now() + config.shutdownTimeoutMs;
    const force = setTimeout(() => {
      logger.warn('in-flight requests did not finish in time; closing anyway');
      server.closeAllConnections();
    }, config.shutdownTimeoutMs);
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeIdleConnections();
    });
    // Writes the request deadline answered early may still be at work, their connections already closed: they
    // finish before the database connections go, rather than stop part-way (then recovered like a crash).
    // Within the same shutdown timeout as the requests (the chart's grace period counts on that).
    const left = Math.max(0, shutdownBy - Date.now());
    const abandoned = await Promise.race([
      writesDone().then(() => false),
      new Promise<boolean>((resolve) => setTimeout(() => resolve(true), left).unref()),
    ]);
    if (abandoned)
      logger.warn(
        'writes still at work did not finish in time; closing anyway (their idempotency records and staged events settle them)',
      );
    clearTimeout(force);
    await sandbox?.stop();
    await started.stop();
    logger.info('stopped');
    logger.flush();
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) console.error(error.message);
  else console.error('Portico API failed to start:', error);
  process.exit(1);
});
