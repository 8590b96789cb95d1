// `portico dispatch`: the webhook dispatcher alone, without serving HTTP (for a deployment that runs
// delivery apart from the API replicas, which then set PORTICO_WEBHOOK_DISPATCH=false). Stops on SIGTERM
// after the attempts in flight.
import { systemClock } from '../../../core/src/clock.js';
import { openConnections } from '../../../core/src/infra/connections.js';
import { createLogger } from '../../../core/src/infra/logger.js';
import { loadConfig } from '../config.js';
import { buildServices } from '../wiring.js';

export async function runDispatcher(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel, 'portico-api');
  const connections = await openConnections(config, (m) => logger.info(m));
  const services = await buildServices({
    config,
    db: connections.mongo.db,
    longDb: connections.mongo.longDb,
    redis: connections.redis,
    clock: systemClock,
    logger,
  });
  await services.dispatcher.start();
  logger.info({ dispatcher: services.dispatcher.id }, 'webhook dispatcher running');
  const stop = async (signal: string) => {
    logger.info({ signal }, 'stopping the webhook dispatcher');
    await services.close();
    await connections.close();
    logger.flush();
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
}
